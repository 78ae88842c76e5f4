"""Tests for scripts.experiments.minatar_random: the random policy's return."""

import csv
import os
import subprocess
import sys

import jax
import numpy as np
import pytest

from scripts.analysis import minatar_report
from scripts.experiments import minatar_random
from tests import without_minatar
from zoo.environments import environment
from zoo.environments import minatar_env

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_random_return_is_the_mean_over_complete_episodes():
  stats = minatar_random.random_policy_return('breakout', 3, num_steps=2000)
  again = minatar_random.random_policy_return('breakout', 3, num_steps=2000)
  assert stats.episode_return == again.episode_return  # Seeded.
  assert stats.num_frames == 2000 and stats.num_episodes > 10
  # The same policy by hand: uniform actions drawn from default_rng(seed).
  env = minatar_env.MinAtarEnvironment('breakout', 3)
  rng = np.random.default_rng(3)
  timestep, returns, running = env.reset(), [], 0.0
  for _ in range(1999):
    timestep = env.step(rng.integers(0, env.num_actions, 1))
    first = timestep.step_type[0] == 0
    running = 0.0 if first else running + timestep.reward[0]
    if timestep.step_type[0] == 2:
      returns.append(running)
  assert stats.num_episodes == len(returns)
  assert stats.episode_return == np.mean(returns)


def test_measure_and_table():
  result = minatar_random.measure('asterix', [1, 2], num_steps=1000)
  assert result.seeds == [1, 2] and len(result.returns) == 2
  assert result.returns[0] != result.returns[1]
  assert result.mean == np.mean(result.returns)
  table = minatar_report.random_markdown([result])
  assert f'| asterix | {result.mean:.2f} |' in table


def test_cli_prints_and_writes_the_table(tmp_path):
  path = tmp_path / 'random.csv'
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_random', '--games=seaquest',
       '--seeds=1', '--num_steps=500', f'--output_csv={path}'],
      cwd=REPO, capture_output=True, text=True, timeout=120, check=True).stdout
  assert '| seaquest |' in out
  with open(path) as f:
    rows = list(csv.DictReader(f))
  assert [(r['game'], r['seeds'], r['num_steps_per_seed']) for r in rows] == [
      ('seaquest', '1', '500')]
  bad = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_random', '--games=pong'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert bad.returncode != 0 and "Unknown MinAtar game 'pong'" in bad.stderr


def test_cli_without_minatar_says_how_to_install_it(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_random', '--games=seaquest'],
      cwd=REPO, capture_output=True, text=True, timeout=60,
      env=without_minatar.environment(tmp_path, REPO))
  without_minatar.assert_refused(result)


def test_the_jitted_random_phase_is_the_budget_rule_on_its_steps():
  from zoo.environments import minatar_jax_env  # pylint: disable=g-import-not-at-top
  phase = minatar_random.random_policy_phase('breakout', 0, 500)
  _, step_type, reward = minatar_jax_env.random_policy_steps(
      minatar_jax_env.make('breakout'), jax.random.PRNGKey(0), 500)
  returns, running = [], 0.0
  for t, r in zip(np.asarray(step_type), np.asarray(reward)):
    running = 0.0 if t == environment.FIRST else running + r
    if t == environment.LAST:
      returns.append(running)
  assert phase.num_episodes == len(returns) and phase.num_frames == 500
  assert phase.episode_return == pytest.approx(np.mean(returns))


def test_jitted_loop_measures_minatar_in_jax():
  result = minatar_random.measure('breakout', [1, 2], num_steps=1000,
                                  loop='jitted')
  again = minatar_random.measure('breakout', [1, 2], num_steps=1000,
                                 loop='jitted')
  assert result == again  # Seeded by JAX keys.
  phase = minatar_random.random_policy_phase('breakout', 2, 1000)
  assert (result.returns[1], result.episodes[1]) == (phase.episode_return,
                                                     phase.num_episodes)
  assert result.returns[0] != result.returns[1] and min(result.episodes) > 10
  python = minatar_random.measure('breakout', [1, 2], num_steps=1000)
  # The same table, another environment's numbers.
  header = lambda r: minatar_report.random_markdown([r]).splitlines()[:2]
  assert header(result) == header(python)
  assert result.returns != python.returns


def test_cli_jitted_loop(tmp_path):
  path = tmp_path / 'random.csv'
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_random', '--loop=jitted',
       '--games=space_invaders', '--seeds=1', '--num_steps=500',
       f'--output_csv={path}'],
      cwd=REPO, capture_output=True, text=True, timeout=300, check=True).stdout
  assert '| space_invaders |' in out
  with open(path) as f:
    rows = list(csv.DictReader(f))
  assert [(r['game'], r['seeds'], r['num_steps_per_seed']) for r in rows] == [
      ('space_invaders', '1', '500')]
  bad = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_random', '--loop=jax'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert bad.returncode != 0 and '--loop' in bad.stderr
