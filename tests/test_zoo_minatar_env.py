"""Tests for zoo.environments.minatar_env: dm_env semantics, seeding, minimal actions, cap."""

import os
import subprocess
import sys

import numpy as np
import pytest

from zoo.environments import environment
from zoo.environments import minatar_env


def _run(env, actions):
  steps = [env.reset()]
  for a in actions:
    steps.append(env.step(a))
  return steps


def test_unknown_game_is_refused_with_the_list_and_a_suggestion():
  with pytest.raises(ValueError, match=r"Did you mean 'breakout'.*asterix"):
    minatar_env.check_game('breakot')


@pytest.mark.parametrize('game', minatar_env.GAMES)
def test_observations_are_object_channels_with_a_stack_of_one(game):
  num_channels, action_set = minatar_env.game_spec(game)
  env = minatar_env.MinAtarEnvironment(game, seed=0, num_envs=2)
  assert env.num_actions == len(action_set)
  timestep = env.reset()
  assert (timestep.step_type == environment.FIRST).all()
  assert timestep.observation.shape == (2, 10, 10, num_channels, 1)
  assert timestep.observation.dtype == np.uint8
  assert set(np.unique(timestep.observation)) <= {0, 1}
  assert env.observation_shape == (10, 10, num_channels, 1)
  assert env.rgb_frames().shape == (2, 10, 10, 3)
  assert env.rgb_frames(scale=4).shape == (2, 40, 40, 3)


def test_same_seed_same_trajectory_and_streams_differ():
  rng = np.random.default_rng(0)
  actions = rng.integers(0, 3, (300, 3))
  a = _run(minatar_env.MinAtarEnvironment('breakout', 5, num_envs=3), actions)
  b = _run(minatar_env.MinAtarEnvironment('breakout', 5, num_envs=3), actions)
  for x, y in zip(a, b):
    for field_x, field_y in zip(x, y):
      np.testing.assert_array_equal(field_x, field_y)
  observations = np.stack([t.observation for t in a])
  assert not np.array_equal(observations[:, 0], observations[:, 1])
  c = _run(minatar_env.MinAtarEnvironment('breakout', 6, num_envs=3), actions)
  assert not all(np.array_equal(x.observation, y.observation)
                 for x, y in zip(a, c))


def test_episodes_end_with_zero_discount_then_auto_reset_ignoring_the_action():
  env = minatar_env.MinAtarEnvironment('breakout', 1, num_envs=1)
  steps = _run(env, np.zeros((2000, 1), int))  # Never moves: loses fast.
  types = np.array([t.step_type[0] for t in steps])
  last = np.flatnonzero(types == environment.LAST)
  assert len(last) >= 2
  for i in last:
    assert steps[i].discount[0] == 0.0
    nxt = steps[i + 1]
    assert nxt.step_type[0] == environment.FIRST
    assert nxt.reward[0] == 0.0 and nxt.discount[0] == 1.0
  mid = types == environment.MID
  assert (np.array([t.discount[0] for t in steps])[mid] == 1.0).all()


def test_frame_cap_cuts_an_episode_with_discount_one():
  env = minatar_env.MinAtarEnvironment('freeway', 0, num_envs=2,
                                       max_episode_frames=7)
  steps = _run(env, np.zeros((16, 2), int))
  types = np.array([t.step_type for t in steps])
  # Freeway episodes last 2500 steps: only the cap ends them here.
  np.testing.assert_array_equal(types[:, 0], [0] + [1] * 6 + [2] + [0] +
                                [1] * 6 + [2] + [0])
  assert steps[7].discount.tolist() == [1.0, 1.0]


def test_agent_actions_index_the_minimal_action_set(monkeypatch):
  env = minatar_env.MinAtarEnvironment('breakout', 0, num_envs=1)
  played = []
  game = env._envs[0]  # pylint: disable=protected-access
  monkeypatch.setattr(game, 'act', lambda a: played.append(a) or (0, False))
  env.reset()
  for a in range(env.num_actions):
    env.step(np.array([a]))
  assert played == list(minatar_env.game_spec('breakout')[1]) == [0, 1, 3]


def test_bad_actions_are_refused():
  env = minatar_env.MinAtarEnvironment('breakout', 0, num_envs=2)
  env.reset()
  with pytest.raises(ValueError, match=r'lie in \[0, 3\)'):
    env.step(np.array([0, 3]))
  with pytest.raises(ValueError, match='one per stream'):
    env.step(np.array([0]))


def test_without_minatar_the_error_names_the_install_command(monkeypatch):
  monkeypatch.setitem(sys.modules, 'minatar', None)  # `import minatar` fails.
  with pytest.raises(minatar_env.NotInstalledError,
                     match=r"pip install -e '\.\[minatar\]'$"):
    minatar_env.check_installed()
  with pytest.raises(minatar_env.NotInstalledError):
    minatar_env.MinAtarEnvironment('breakout', seed=0)


def test_minatar_loads_without_its_display_libraries_and_says_nothing():
  # A fresh process: this one may have imported matplotlib already.
  code = '\n'.join([
      'import sys',
      'from zoo.environments import minatar_env',
      'minatar_env.MinAtarEnvironment("breakout", seed=0).reset()',
      'print(sorted(set(sys.modules) & {"matplotlib", "seaborn", "pandas"}))',
      'import matplotlib',  # Hidden only while MinAtar was imported.
      'print(sys.meta_path[0].__class__.__name__)'])
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  result = subprocess.run([sys.executable, '-c', code], cwd=root,
                          capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr
  loaded, first_finder = result.stdout.split('\n')[:2]
  assert loaded == '[]'
  assert first_finder != '_HideDisplayLibraries'
  assert 'render' not in result.stderr  # MinAtar's warning is silenced.
