"""Tests for scripts.analysis.compare_loops on CSVs written here."""

import csv
import os
import subprocess
import sys

import pytest

from scripts.analysis import compare_loops

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _write(root, seed, evals, trains):
  directory = os.path.join(root, 'cr_dqn', 'breakout', f'seed_{seed}')
  os.makedirs(directory)
  with open(os.path.join(directory, 'results.csv'), 'w', newline='') as f:
    writer = csv.DictWriter(f, ['seed', 'iteration', 'frame',
                                'eval_episode_return', 'train_episode_return'])
    writer.writeheader()
    for i, (e, t) in enumerate(zip(evals, trains)):
      writer.writerow(dict(seed=seed, iteration=i, frame=1000 * i,
                           eval_episode_return=e, train_episode_return=t))


def test_tables_give_each_loops_spread_and_the_difference(tmp_path):
  python, jitted = str(tmp_path / 'python'), str(tmp_path / 'jitted')
  for seed, final in ((1, 2.0), (2, 4.0)):
    _write(python, seed, [0.0, final], ['nan', 1.0])
  for seed, final in ((1, 3.0), (2, 5.0), (3, 7.0)):
    _write(jitted, seed, [0.0, final], ['nan', 2.0])
  lines = compare_loops.comparison_lines(
      compare_loops.read_runs(python, 'cr_dqn', 'breakout'),
      compare_loops.read_runs(jitted, 'cr_dqn', 'breakout'), reps=2000)
  assert lines[2] == '| 0 | 0 | 0.00 (0.00–0.00, 2) | 0.00 (0.00–0.00, 3) | – | – |'
  assert lines[3] == ('| 1 | 1000 | 3.00 (2.00–4.00, 2) | 5.00 (3.00–7.00, 3) '
                      '| 1.00 (1.00–1.00, 2) | 2.00 (2.00–2.00, 3) |')
  eval_line = next(l for l in lines if l.startswith('| eval |'))
  assert eval_line.startswith('| eval | 3.00 [') and '| 2.00 [' in eval_line


def test_a_root_without_runs_is_one_error_line(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.compare_loops',
       f'--python_root={tmp_path}', f'--jitted_root={tmp_path}'],
      cwd=REPO, capture_output=True, text=True, timeout=120)
  assert result.returncode == 1
  assert result.stderr.strip().startswith('Error: no results CSV matches')
  assert len(result.stderr.strip().splitlines()) == 1
