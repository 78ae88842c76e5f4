"""The run CSV: one row per iteration (ARCHITECTURE.md), written atomically."""

import csv
import math
import os
from typing import Any, Dict, Iterable, Iterator, List, Optional
from typing import Sequence, Tuple

from zoo.storage import files

COLUMNS = (
    'agent', 'environment_name', 'seed',
    'iteration', 'frame', 'eval_episode_return', 'train_episode_return',
    'eval_num_episodes', 'train_num_episodes', 'eval_frame_rate',
    'train_frame_rate', 'train_exploration_epsilon', 'train_state_value',
    'normalized_return', 'capped_normalized_return', 'human_gap',
    'eval_num_frames', 'eval_num_cut_episodes',
)
# Columns rows written before them lack (a resumed run's earlier rows):
# written empty there, since those phases did not record them.
LATER_COLUMNS = ('eval_num_frames', 'eval_num_cut_episodes')
# Columns that an interrupted-and-resumed run reproduces exactly.
DETERMINISTIC_COLUMNS = tuple(c for c in COLUMNS
                              if c not in ('eval_frame_rate',
                                           'train_frame_rate'))

Row = Dict[str, Any]


def make_row(*, agent: str, environment_name: str, seed: int, iteration: int,
             frame: int, eval_stats, train_stats, train_exploration_epsilon,
             train_state_value, normalized_return: float) -> Row:
  """Return one CSV row; iteration 0 (eval only) has NaN train columns."""
  nan = float('nan')
  trained = train_stats is not None
  capped = min(normalized_return, 1.0)
  return {
      'agent': agent,
      'environment_name': environment_name,
      'seed': seed,
      'iteration': iteration,
      'frame': frame,
      'eval_episode_return': eval_stats.episode_return,
      'train_episode_return': train_stats.episode_return if trained else nan,
      'eval_num_episodes': eval_stats.num_episodes,
      'train_num_episodes': train_stats.num_episodes if trained else nan,
      'eval_frame_rate': eval_stats.frame_rate,
      'train_frame_rate': train_stats.frame_rate if trained else nan,
      'train_exploration_epsilon': (train_exploration_epsilon if trained
                                    else nan),
      'train_state_value': train_state_value if trained else nan,
      'normalized_return': normalized_return,
      'capped_normalized_return': capped,
      'human_gap': 1.0 - capped if not math.isnan(capped) else nan,
      # The frames evaluated: past the budget for whole episodes at K > 1
      # (zoo.loops.phase_accounting), and the episodes cut at its bound.
      'eval_num_frames': eval_stats.num_frames,
      'eval_num_cut_episodes': eval_stats.num_cut,
  }


def write_rows(path: str, rows: Sequence[Row]) -> None:
  """Write all rows to `path` atomically (temp file, then rename)."""
  files.write_csv_atomically(path, COLUMNS, [
      {c: row.get(c, '') if c in LATER_COLUMNS else row[c] for c in COLUMNS}
      for row in rows])


class DamagedError(ValueError):
  """A run CSV with a damaged row: `path`, `line` (1 = the header), `reason`."""

  def __init__(self, path: str, line: int, reason: str):
    super().__init__(f'{path}, line {line}: {reason}')
    self.path, self.line, self.reason = path, line, reason


def row_damage(header: Sequence[str], row: Sequence[str]) -> Optional[str]:
  """Return why a CSV row is damaged (None: it is whole).

  The one rule for every reader of run CSVs: a row has the header's fields,
  and its iteration and seed (where the header has them) are integers.
  """
  if len(row) != len(header):
    return f'{len(row)} fields where the header has {len(header)}'
  values = dict(zip(header, row))
  for name in ('iteration', 'seed'):
    try:
      if name in values and float(values[name]) != int(float(values[name])):
        raise ValueError
    except (ValueError, OverflowError):
      return f'its {name} {values[name]!r} is not an integer'
  return None


def checked_rows(lines: Iterable[str], path: str
                 ) -> Iterator[Tuple[int, List[str]]]:
  """Yield (line number, fields) of a CSV's lines, the header first.

  Blank lines are skipped. A row that `row_damage` rejects, or a last row
  without its line end (a file cut off there), raises DamagedError.
  """
  ended = [True]

  def track(text_lines):
    for text in text_lines:
      ended[0] = text.endswith(('\n', '\r'))
      yield text

  reader = csv.reader(track(lines))
  header = None
  for row in reader:
    if not row:
      continue
    if header is None:
      header = row
      yield reader.line_num, row
      continue
    reason = row_damage(header, row)
    if reason is None and not ended[0]:
      reason = 'the file ends inside this row (cut off)'
    if reason is not None:
      raise DamagedError(path, reader.line_num, reason)
    yield reader.line_num, row


def damage(path: str) -> Optional[DamagedError]:
  """Return the first damaged row of the run CSV at `path` (None: whole)."""
  if not path or not os.path.exists(path):
    return None
  try:
    with open(path, newline='') as f:
      for _ in checked_rows(f, path):
        pass
  except DamagedError as e:
    return e
  except (UnicodeDecodeError, csv.Error) as e:
    return DamagedError(path, 1, f'unreadable ({e})')
  return None


def read_rows(path: str) -> List[Dict[str, str]]:
  """Return the rows of a run CSV as dicts of strings."""
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


def iterations(path: str) -> List[int]:
  """Return the iterations a run CSV holds, in order ([]: no CSV).

  Raises OSError, ValueError, KeyError or TypeError for an unreadable CSV.
  """
  if not path or not os.path.exists(path):
    return []
  return [int(float(row['iteration'])) for row in read_rows(path)
          if row.get('iteration') not in (None, '')]
