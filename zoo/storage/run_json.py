"""`run.json`: a run's resolved settings, next to its results CSV.

  {"agent": "cr_dqn", "suite": "atari", "settings": {<every setting>}}

Written atomically when a run starts; older runs have none.
"""

import json
import os
from typing import Any, Dict, Optional

from zoo.storage import files

FILE_NAME = 'run.json'


def path_next_to(results_csv_path: str) -> str:
  """Return the run.json path beside a results CSV."""
  return os.path.join(os.path.dirname(os.path.abspath(results_csv_path)),
                      FILE_NAME)


def write(results_csv_path: str, agent: str, suite: str,
          settings: Dict[str, Any]) -> str:
  """Write run.json beside `results_csv_path`; return its path."""
  path = path_next_to(results_csv_path)
  content = {'agent': agent, 'suite': suite,
             'settings': dict(settings, agent=agent, suite=suite)}
  files.write_atomically(path, json.dumps(content, indent=1, sort_keys=True)
                         + '\n')
  return path


def read(path: str) -> Optional[Dict[str, Any]]:
  """Return the run.json at `path` (a file, or a directory holding one).

  None when there is none (older runs); ValueError if not a run.json.
  """
  if os.path.isdir(path):
    path = os.path.join(path, FILE_NAME)
  try:
    with open(path) as f:
      data = json.load(f)
  except FileNotFoundError:
    return None
  except json.JSONDecodeError as e:
    raise ValueError(f'{path} is not JSON ({e})') from e
  if not isinstance(data, dict) or not isinstance(data.get('settings'), dict):
    raise ValueError(f'{path} is not a run.json (no "settings" object)')
  return data
