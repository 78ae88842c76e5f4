"""Tiny seeded runs give the CSVs of tests/data/reference_runs/ (README there).

The code's structure may change; what a run computes must not. Frame rates
are timings and differ from run to run; every other column of the reference
must match (a run may write columns added after the reference).
"""

import math
import os
import subprocess
import sys

import pytest

from tests import compile_flags
from tests import csv_check

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, 'tests', 'data', 'reference_runs')

ATARI = ['cr_dqn.run_atari', '--environment_name=pong', '--num_iterations=2',
         '--num_train_frames=2000', '--num_eval_frames=1000',
         '--replay_capacity=5000', '--min_replay_capacity_fraction=0.1',
         '--num_quantiles=11', '--hidden_size=32']
MINATAR = ['cr_dqn.run_minatar', '--environment_name=breakout',
           '--num_iterations=2', '--num_train_frames=1000',
           '--num_eval_frames=500', '--replay_capacity=2000',
           '--min_replay_capacity_fraction=0.1', '--num_quantiles=11',
           '--hidden_size=32', '--target_network_update_period=200']
RUNS = {
    'atari_python': ATARI,
    'minatar_python': MINATAR + ['--loop=python'],
    'minatar_python_k2': MINATAR + ['--loop=python', '--num_envs=2'],
    'minatar_jitted': MINATAR + ['--loop=jitted'],
}
TIMINGS = ('eval_frame_rate', 'train_frame_rate')


def _same(expected: str, got: str) -> bool:
  try:
    a, b = float(expected), float(got)
  except ValueError:
    return expected == got
  if math.isnan(a):
    return math.isnan(b)
  return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)


@pytest.mark.end_to_end
@pytest.mark.parametrize('name', sorted(RUNS))
def test_a_tiny_run_gives_the_reference_csv(tmp_path, name):
  if name.startswith('minatar'):
    pytest.importorskip('minatar')
  path = tmp_path / 'results.csv'
  subprocess.run([sys.executable, '-m'] + RUNS[name] +
                 [f'--results_csv_path={path}'], cwd=REPO, check=True,
                 capture_output=True, timeout=300,
                 env=compile_flags.user_environment())
  expected = csv_check.read_back_file(os.path.join(DATA, name + '.csv'))
  got = csv_check.read_back_file(str(path))
  # The reference's columns, in its order; columns added since (the
  # evaluated frames) are the code's and not compared.
  assert [c for c in got[0] if c in expected[0]] == list(expected[0])
  assert len(got) == len(expected)
  for want, row in zip(expected, got):
    for column in want:
      if column not in TIMINGS:
        assert _same(want[column], row[column]), (
            name, want['iteration'], column, want[column], row[column])
