"""Where each run of a campaign stands: done, running, cut, failed, pending."""

import json
import os
from typing import List, NamedTuple, Optional, Sequence

from scripts.campaign import budget
from scripts.campaign import run_record as run_lib
from zoo.storage import run_directory

DONE, RUNNING, CUT, FAILED, PENDING = ('done', 'running', 'cut', 'failed',
                                       'pending')
STATES = (DONE, RUNNING, CUT, FAILED, PENDING)


class RunStatus(NamedTuple):
  run: run_lib.Run
  state: str
  iterations: int      # Iterations every seed's CSV holds.
  detail: str


def read_json(path: str) -> Optional[dict]:
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def of(run: run_lib.Run, root: str) -> RunStatus:
  """Classify one run (the done rule is run_lib.Run.done)."""
  done = run.iterations_done(root)
  wanted = run.num_iterations() + 1
  if run.done(root):
    return RunStatus(run, DONE, done, '')
  holders = [h for h in map(run_directory.holder, run.seed_dirs(root)) if h]
  if holders:
    return RunStatus(run, RUNNING, done, holders[0])
  exit_status = read_json(os.path.join(run.home(root), run_lib.EXIT_FILE))
  log = os.path.join(run.home(root), run_lib.LOG_FILE)
  if exit_status and exit_status.get('returncode') in budget.CUT:
    return RunStatus(run, CUT, done, f'stopped at a safe point, {done} of '
                     f'{wanted} iterations; resumes next time')
  if exit_status and exit_status.get('returncode') not in (0, None):
    return RunStatus(run, FAILED, done,
                     f'exit {exit_status["returncode"]}, see {log}')
  return RunStatus(run, PENDING, done, '')


def table(statuses: Sequence[RunStatus]) -> str:
  """Return a plain-text table of the runs and a count per state."""
  rows = [('run', 'state', 'iterations', 'detail')] + [
      (s.run.name, s.state, f'{s.iterations}/{s.run.num_iterations() + 1}',
       s.detail) for s in statuses]
  widths = [max(len(r[i]) for r in rows) for i in range(4)]
  lines = ['  '.join(c.ljust(w) for c, w in zip(r, widths)).rstrip()
           for r in rows]
  counts = [f'{sum(s.state == state for s in statuses)} {state}'
            for state in STATES]
  return '\n'.join(lines + [', '.join(counts) + f' ({len(statuses)} runs)'])


def to_launch(runs: Sequence[run_lib.Run], root: str,
              retry_failed: bool = True) -> List[run_lib.Run]:
  """Return the runs to start: not done, not running (failed if retried)."""
  skip = (DONE, RUNNING) + (() if retry_failed else (FAILED,))
  return [r for r in runs if of(r, root).state not in skip]
