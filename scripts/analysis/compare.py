r"""Compare configuration A's runs with B's per game: means and difference.

  python -m scripts.analysis.compare --a=LABEL=PATH --b=LABEL=PATH
      [--a=... --b=...] [--games=asterix,breakout] [--num_iterations=N]
      [--column=eval_episode_return] [--per_iteration] [--bootstrap_reps=50000]

Each PATH is a directory of runs (in any layout; a run's game is its
run.json's) or a study report's runs.csv, of which LABEL picks the
configuration. Prints, per game and (A, B) pair, each side's mean return over
seeds at iteration N (--num_iterations, else the last both reached) with its
95% bootstrap CI, and A - B with its CI; --per_iteration adds each
iteration's mean over seeds with their range.
"""

import csv
import math
import os
import sys
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

from absl import flags
import numpy as np

from scripts.analysis import bootstrap
from scripts.analysis import run_data
from scripts.analysis import tables
from zoo.configuration import cli

FLAGS = flags.FLAGS
COLUMNS = {'eval_episode_return': 'eval_return',
           'train_episode_return': 'train_return'}
# The columns of the study report's runs.csv that a side reads.
REPORT_COLUMNS = ('configuration', 'game', 'state', 'final_eval_return')
REPORT_FIX = ('Pass the runs.csv that python -m scripts.campaign '
              '--campaign=minatar_study --report=DIR writes '
              '(docs/minatar/runs.csv).')


class Side(NamedTuple):
  """One configuration's runs: curves per game, or a report's finals."""
  label: str
  runs: Dict[str, List[run_data.Run]]  # {game: runs}; empty for a report.
  finals: Optional[Dict[str, List[float]]] = None  # {game: final returns}.


def report_finals(path: str) -> Dict[Tuple[str, str], List[float]]:
  """Return {(configuration, game): final returns of complete seeds}.

  Raises:
    ValueError: the file is not the report's runs.csv, or is cut short.
  """
  out: Dict[Tuple[str, str], List[float]] = {}
  try:
    with open(path, newline='') as f:
      reader = csv.DictReader(f)
      missing = [c for c in REPORT_COLUMNS
                 if c not in (reader.fieldnames or [])]
      if missing:
        raise ValueError(f'{path}: missing column(s) {missing}. '
                         f'{REPORT_FIX}')
      for row in reader:
        if row['state'] != 'complete':
          continue
        value = run_data.to_float(row['final_eval_return'])
        if not math.isfinite(value):
          raise ValueError(
              f'{path}, line {reader.line_num}: final return '
              f'{row["final_eval_return"]!r} is not a number (the file is '
              f'cut short or damaged). {REPORT_FIX}')
        out.setdefault((row['configuration'], row['game']), []).append(value)
  except (OSError, UnicodeDecodeError, csv.Error) as e:
    raise ValueError(f'{path}: cannot be read ({e}). {REPORT_FIX}') from e
  return out


def load_side(spec: str) -> Side:
  """Return the side that a --a or --b value, LABEL=PATH or PATH, names."""
  label, path = run_data.parse_runs_arg(spec)
  label = spec if path == spec else label  # PATH alone: labelled by itself.
  if not os.path.exists(path):
    raise ValueError(f'{path}: no such file or directory; pass a directory '
                     "of runs or a study report's runs.csv.")
  if os.path.isfile(path):
    finals = report_finals(path)
    held = sorted({c for c, _ in finals})
    if label not in held:
      raise ValueError(f'{label} not in {path}; it holds {", ".join(held)}. '
                       'Pass LABEL=PATH with one of them.')
    return Side(label, {}, {g: v for (c, g), v in finals.items()
                            if c == label})
  runs: Dict[str, List[run_data.Run]] = {}
  for run in run_data.load_run_dir(path, label):
    # The game its run.json records (a MinAtar CSV's is minatar-<game>).
    game = (run.settings or {}).get('environment_name', run.game)
    runs.setdefault(game, []).append(run)
  return Side(label, runs)


def values_at(side: Side, game: str, iteration: int, column: str
              ) -> List[float]:
  """Return the finite `column` values at `iteration` of a side's seeds."""
  if side.finals is not None:
    return side.finals.get(game, [])
  found = (run.value_at(iteration, COLUMNS[column])
           for run in side.runs.get(game, []))
  return [value for value in found if value is not None]


def last_iteration(sides: Sequence[Side], game: str) -> Optional[int]:
  """Return the last iteration that every run directory reached in `game`."""
  reached = [max(r.last_iteration for r in s.runs[game])
             for s in sides if s.finals is None and s.runs.get(game)]
  return min(reached) if reached else None


def _seeds_cell(values: Sequence[float], reps: int) -> str:
  cell = bootstrap.mean_with_ci(values, reps)
  return f'{bootstrap.cell_text(cell)} ({len(values)})'


def comparison_lines(a_sides: Sequence[Side], b_sides: Sequence[Side],
                     games: Sequence[str], column: str, reps: int,
                     num_iterations: Optional[int] = None) -> List[str]:
  """Return the table of each game and (A, B) pair (markdown)."""
  rows = []
  for game in games:
    for a in a_sides:
      for b in b_sides:
        n = (num_iterations if num_iterations is not None
             else last_iteration((a, b), game))
        new, old = (values_at(s, game, n, column) for s in (a, b))
        difference = bootstrap.difference_ci(new, old, reps)
        rows.append([game, 'final' if n is None else n, a.label,
                     _seeds_cell(new, reps), b.label, _seeds_cell(old, reps),
                     bootstrap.cell_text(difference)])
  return tables.markdown(
      ['game', 'iteration', 'A', 'A: mean [95% CI] (seeds)', 'B',
       'B: mean [95% CI] (seeds)', 'A - B [95% CI]'], rows, 'lr')


def _spread(values: List[float]) -> str:
  if not values:
    return '–'
  return (f'{np.mean(values):.2f} ({min(values):.2f}–{max(values):.2f}, '
          f'{len(values)})')


def iteration_lines(a: Side, b: Side, game: str, column: str) -> List[str]:
  """Return each iteration's mean over seeds (range, seeds) of A and B."""
  if a.finals is not None or b.finals is not None:
    raise ValueError('--per_iteration needs run directories on both sides; '
                     "a report's runs.csv holds final returns only.")
  last = last_iteration((a, b), game)
  if last is None:
    return []
  frames = {int(i): int(f) for r in a.runs[game]
            for i, f in zip(r.iteration, r.frame) if np.isfinite(f)}
  return [f'{game}, {column}: {a.label} | {b.label}', ''] + tables.markdown(
      ['iteration', 'frame', a.label, b.label],
      [[i, frames.get(i, '–'), _spread(values_at(a, game, i, column)),
        _spread(values_at(b, game, i, column))] for i in range(last + 1)],
      'rr') + ['']


def define_flags() -> None:
  """Define this entry point's flags (only when run)."""
  flags.DEFINE_multi_string('a', None, 'LABEL=PATH (or PATH) of a '
                            'configuration A: a directory of runs or a '
                            "study report's runs.csv.", required=True)
  flags.DEFINE_multi_string('b', None, 'LABEL=PATH (or PATH) of a '
                            'configuration B, compared with each A.',
                            required=True)
  flags.DEFINE_list('games', None, 'Games (default: those both sides hold).')
  flags.DEFINE_integer('num_iterations', None, 'Compare at this iteration '
                       "(a complete run's last); default: the last both "
                       'sides reached.')
  flags.DEFINE_enum('column', 'eval_episode_return', list(COLUMNS),
                    'The return compared.')
  flags.DEFINE_bool('per_iteration', False, "Also tabulate each iteration's "
                    'mean over seeds (run directories only).')
  flags.DEFINE_integer('bootstrap_reps', 50_000, 'Bootstrap resamples.')


def main(unused_argv):
  try:
    a_sides = [load_side(spec) for spec in FLAGS.a]
    b_sides = [load_side(spec) for spec in FLAGS.b]
    games = FLAGS.games or sorted(set.intersection(
        *(set(s.runs) | set(s.finals or ()) for s in a_sides + b_sides)))
    if not games:
      raise ValueError('the sides share no game; pass --games, or sides '
                       'that ran the same games.')
    lines = comparison_lines(a_sides, b_sides, games, FLAGS.column,
                             FLAGS.bootstrap_reps, FLAGS.num_iterations)
    if FLAGS.per_iteration:
      lines += [''] + [line for game in games for a in a_sides
                       for b in b_sides
                       for line in iteration_lines(a, b, game, FLAGS.column)]
  except ValueError as e:
    sys.exit(f'Error: {e}')
  print(f'{FLAGS.column}, mean over seeds [95% bootstrap CI] (seeds):\n')
  print('\n'.join(lines))


if __name__ == '__main__':
  define_flags()
  cli.run(main)
