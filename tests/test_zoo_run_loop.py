"""Tests for zoo.run_loop: phase statistics, seeding, resume equivalence."""

import math

import jax
import numpy as np
import pytest

from tests import catch
from tests import test_zoo_agent
from zoo import checkpoint
from zoo import environment
from zoo import run_loop


class _ScriptedEnv(environment.BatchedEnvironment):
  """Replays a fixed list of (step_type, reward) per stream."""

  num_actions = 2

  def __init__(self, script):
    self._script = np.asarray(script)  # [T, K, 2]
    self.num_envs = self._script.shape[1]
    self._t = 0

  def _timestep(self):
    step = self._script[self._t]
    k = self.num_envs
    return environment.BatchedTimeStep(
        step[:, 0].astype(np.int8), step[:, 1].astype(np.float32),
        np.ones(k, np.float32), np.zeros((k, 2, 2, 1), np.uint8))

  def reset(self):
    self._t = 0
    return self._timestep()

  def step(self, actions):
    self._t += 1
    return self._timestep()


F, M, L = 0, 1, 2


def _act(timestep):
  return np.zeros(timestep.step_type.shape[0], np.int32)


def test_phase_return_is_mean_of_complete_episodes_of_raw_rewards():
  script = [[(F, 0)], [(M, 5)], [(L, -3)], [(F, 0)], [(M, 7)], [(L, 1)],
            [(F, 0)], [(M, 100)]]
  stats = run_loop.run_phase(_ScriptedEnv(script), _act, num_frames=32,
                             num_action_repeats=4)
  assert stats.num_episodes == 2 and stats.num_frames == 32
  assert stats.episode_return == (2 + 8) / 2  # Unclipped; partial ignored.


def test_phase_return_is_partial_when_no_episode_completes():
  script = [[(F, 0), (F, 0)], [(M, 5), (M, 1)], [(M, 2), (M, 1)]]
  stats = run_loop.run_phase(_ScriptedEnv(script), _act, num_frames=24,
                             num_action_repeats=4)
  assert stats.num_episodes == 0 and stats.num_frames == 24
  assert stats.episode_return == (7 + 2) / 2  # Mean over streams.


def test_environment_seeds_differ_by_iteration_and_phase():
  seeds = {run_loop.environment_seed(1, i, p)
           for i in range(5) for p in run_loop.PHASES}
  assert len(seeds) == 10
  assert run_loop.environment_seed(1, 3, 'eval') == run_loop.environment_seed(
      1, 3, 'eval')


def test_config_differences_name_the_flags():
  diffs = run_loop.config_differences({'a': 1, 'b': 2}, {'a': 1, 'b': 3})
  assert diffs == ["--b=2 in the checkpoint, 3 now"]


def _catch_run(num_iterations, checkpoint_dir, config=None):
  s = test_zoo_agent._settings('cr_dqn', num_iterations=3,
                               num_train_frames=300, num_eval_frames=50,
                               num_envs=2)
  agent, replay = test_zoo_agent._catch_agent(s)
  rows = run_loop.run_experiment(
      agent=agent, replay=replay,
      make_environment=lambda it, phase: catch.CatchBatchedEnvironment(
          2, run_loop.environment_seed(5, it, phase)),
      num_iterations=num_iterations, num_train_frames=300, num_eval_frames=50,
      num_action_repeats=1, agent_name='cr_dqn', environment_name='catch',
      seed=5, normalize=lambda x: x / 2, config=config or {'x': 1},
      checkpoint_dir=checkpoint_dir)
  return rows, agent


def _deterministic(rows):
  return [{k: v for k, v in row.items() if 'frame_rate' not in k}
          for row in rows]


def test_resumed_run_equals_uninterrupted_run(tmp_path):
  full_rows, full_agent = _catch_run(3, str(tmp_path / 'full'))
  # Stop after iteration 1, then resume with fresh objects (as a restart).
  _catch_run(1, str(tmp_path / 'resumed'))
  assert checkpoint.latest(str(tmp_path / 'resumed')).endswith('000001')
  rows, agent = _catch_run(3, str(tmp_path / 'resumed'))
  assert len(rows) == 4 and agent.num_updates > 100  # It learned.
  a, b = _deterministic(full_rows), _deterministic(rows)
  for x, y in zip(a, b):
    assert x.keys() == y.keys()
    for key in x:
      assert x[key] == y[key] or (isinstance(x[key], float) and
                                  math.isnan(x[key]) and math.isnan(y[key]))
  for x, y in zip(jax.tree.leaves(full_agent.get_state()),
                  jax.tree.leaves(agent.get_state())):
    np.testing.assert_array_equal(x, y)


def test_checkpoint_of_another_configuration_is_refused(tmp_path):
  _catch_run(0, str(tmp_path), config={'num_quantiles': 11})
  with pytest.raises(ValueError, match='--num_quantiles=11 in the checkpoint'):
    run_loop.check_checkpoint_config(str(tmp_path), {'num_quantiles': 201})
