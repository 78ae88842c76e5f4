r"""Compare two loops' runs of one agent and game, seed by seed, iteration by iteration.

  python -m scripts.analysis.compare_loops --python_root=runs/loops/python \
      --jitted_root=runs/loops/jitted [--agent=cr_dqn] [--game=breakout]

Each root holds a campaign's layout,
ROOT/<agent>/<game>/seed_<s>/results.csv, of runs with the same settings but
--loop. Prints, per iteration, each loop's evaluation and training returns:
the mean over its seeds with the range, then the mean of the last iteration
with its 95% bootstrap CI and the difference jitted - python with its CI
(each side's seeds resampled).
"""

import csv
import glob
import os
import sys
from typing import Dict, List

from absl import app
from absl import flags
import numpy as np

from scripts.analysis import minatar_report
from zoo.configuration import cli

FLAGS = flags.FLAGS
COLUMNS = ('eval_episode_return', 'train_episode_return')


def read_runs(root: str, agent: str, game: str) -> Dict[int, List[Dict]]:
  """Return {seed: rows} of the runs under root (ValueError if none)."""
  pattern = os.path.join(root, agent, game, 'seed_*', 'results.csv')
  runs = {}
  for path in sorted(glob.glob(pattern)):
    with open(path, newline='') as f:
      rows = list(csv.DictReader(f))
    if rows:
      runs[int(rows[0]['seed'])] = rows
  if not runs:
    raise ValueError(f'no results CSV matches {pattern}; pass the --root_dir '
                     'of a campaign (python -m scripts.campaign).')
  return runs


def _values(runs: Dict[int, List[Dict]], iteration: int, column: str
            ) -> List[float]:
  return [float(rows[iteration][column]) for rows in runs.values()
          if len(rows) > iteration and rows[iteration][column] != 'nan']


def _spread(values: List[float]) -> str:
  if not values:
    return '–'
  return (f'{np.mean(values):.2f} ({min(values):.2f}–{max(values):.2f}, '
          f'{len(values)})')


def comparison_lines(python: Dict[int, List[Dict]],
                     jitted: Dict[int, List[Dict]], reps: int) -> List[str]:
  """Return the tables' lines (markdown)."""
  # The last iteration both loops reached (with any of their seeds).
  last = min(max(len(r) for r in python.values()),
             max(len(r) for r in jitted.values())) - 1
  lines = ['| iteration | frame | eval, python | eval, jitted | '
           'train, python | train, jitted |', '|---:|---:|---|---|---|---|']
  for i in range(last + 1):
    frame = next(iter(python.values()))[i]['frame']
    cells = [_spread(_values(runs, i, column)) for column in COLUMNS
             for runs in (python, jitted)]
    lines.append(f'| {i} | {frame} | ' + ' | '.join(cells) + ' |')
  lines += ['', f'Iteration {last}, mean [95% bootstrap CI] (seeds):', '',
            '| return | python loop | jitted loop | jitted - python |',
            '|---|---|---|---|']
  for column in COLUMNS:
    a, b = _values(jitted, last, column), _values(python, last, column)
    lines.append(f'| {column.split("_")[0]} | '
                 + minatar_report.comparison_cells(a, b, reps))
  return lines


def define_flags() -> None:
  """Define this entry point's flags (only when run)."""
  flags.DEFINE_string('python_root', None, "The Python loop's runs.",
                      required=True)
  flags.DEFINE_string('jitted_root', None, "The jitted loop's runs.",
                      required=True)
  flags.DEFINE_string('agent', 'cr_dqn', 'The agent package.')
  flags.DEFINE_string('game', 'breakout', 'The game.')
  flags.DEFINE_integer('bootstrap_reps', 50_000, 'Bootstrap resamples.')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  try:
    python = read_runs(FLAGS.python_root, FLAGS.agent, FLAGS.game)
    jitted = read_runs(FLAGS.jitted_root, FLAGS.agent, FLAGS.game)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  print(f'{FLAGS.agent} on {FLAGS.game}: returns, mean over seeds '
        '(range, seeds):\n')
  print('\n'.join(comparison_lines(python, jitted, FLAGS.bootstrap_reps)))


if __name__ == '__main__':
  define_flags()
  cli.run(main)
