"""Tests for scripts.experiments.minatar_jax_agreement: random-policy z-tests."""

import math
import os
import subprocess
import sys

import numpy as np
import pytest

from scripts.experiments import minatar_jax_agreement as agreement

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_z_statistic():
  a = np.array([0.0, 2.0, 4.0])    # Mean 2, SE 2 / sqrt(3).
  b = np.array([3.0, 5.0, 7.0])    # Mean 5, SE 2 / sqrt(3).
  assert agreement.z_statistic(a, b) == pytest.approx(
      3 / math.sqrt(2 * 4 / 3))
  assert agreement.z_statistic(b, a) == -agreement.z_statistic(a, b)
  constant = np.full(5, 2501.0)
  assert agreement.z_statistic(constant, constant) == 0.0
  assert agreement.z_statistic(constant, constant + 1) == math.inf
  assert agreement.critical_z(0.05) == pytest.approx(1.95996, abs=1e-4)


def test_minatar_episodes_are_complete_and_seeded():
  sample = agreement.minatar_episodes('breakout', 3, 20)
  again = agreement.minatar_episodes('breakout', 3, 20)
  np.testing.assert_array_equal(sample.returns, again.returns)
  np.testing.assert_array_equal(sample.lengths, again.lengths)
  assert len(sample.returns) == 20 and (sample.lengths >= 1).all()
  assert not np.array_equal(sample.lengths,
                            agreement.minatar_episodes('breakout', 4,
                                                       20).lengths)


def test_parse_episodes():
  episodes = agreement.parse_episodes(['breakout:50'], ['asterix', 'breakout'])
  assert episodes == {'asterix': agreement.DEFAULT_EPISODES['asterix'],
                      'breakout': 50}
  for bad in ['breakout', 'breakout:1', 'breakout:x', 'pong:5']:
    with pytest.raises(ValueError):
      agreement.parse_episodes([bad], ['breakout'])


def test_cli_prints_the_table():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_jax_agreement',
       '--games=breakout', '--episodes=breakout:200'],
      cwd=REPO, capture_output=True, text=True, timeout=300, check=True).stdout
  assert '| breakout | 200 |' in out and 'alpha = 0.005' in out
  bad = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_jax_agreement',
       '--episodes=breakout:1'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert bad.returncode != 0 and 'N >= 2' in bad.stderr
