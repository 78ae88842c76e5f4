"""Tests for zoo.loops.build: the agent and replay follow the settings."""

import dataclasses

import jax
import numpy as np

from zoo.configuration import agent_registry
from zoo.loops import build
from zoo.replay import device_replay
from zoo.replay import frame_replay as replay_lib
from zoo.suites import minatar_suite
from zoo.configuration import settings


def _settings(**values):
  return settings.resolve_settings(
      minatar_suite.MINATAR, agent_registry.presets()['NC-QR-DQN-0'],
      dict(dict(num_envs=2, replay_capacity=1000, num_quantiles=11,
                hidden_size=16, results_csv_path='', checkpoint_dir=''),
           **values))


def test_the_agent_and_replay_follow_the_settings():
  s = _settings()
  agent, replay = build.build_agent(minatar_suite.MINATAR, s, num_actions=3)
  assert (replay.capacity, replay.num_streams) == (1000, 2)
  assert not isinstance(replay, device_replay.DeviceFrameReplay)
  config = agent._config  # pylint: disable=protected-access
  assert config.min_replay_size == s.min_replay_size() == 50
  assert (config.learn_period, config.num_action_repeats) == (4, 1)
  assert config.grad_scale == 2 / 11  # NC-QR-DQN-0 scales the gradient.
  assert agent.exploration_epsilon == s.exploration_epsilon_begin_value
  make = build.make_environment_factory(minatar_suite.MINATAR, s)
  env = make(1, 'train')
  try:
    assert env.num_envs == 2
  finally:
    env.close()


def test_both_replays_sample_the_settings_n_step_returns():
  s = _settings(n_steps=3, additional_discount=0.5, replay_capacity=40,
                min_replay_capacity_fraction=1.0, batch_size=4)
  assert build.n_step(s) == replay_lib.NStep(n=3, discount=0.5)
  for on_device in (False, True):
    _, replay = build.build_agent(
        minatar_suite.MINATAR, dataclasses.replace(
            s, replay_on_device=on_device), num_actions=3)
    shape = (2,) + minatar_suite.MINATAR.observation_shape(s)
    for t in range(6):  # One episode: rewards 1 each step from step 1.
      replay.add(np.full(2, 0 if t == 0 else 1, np.int8),
                 np.zeros(shape, np.uint8), np.zeros(2, np.int32),
                 np.ones(2, np.float32), np.ones(2, np.float32))
    # Steps 1, 2 and 3 alone hold whole 3-step returns: 1 + 1/2 + 1/4.
    batch = (replay.sample(8) if not on_device else jax.jit(
        replay.sampler, static_argnums=2)(replay.device_arrays,
                                          jax.random.PRNGKey(0), 8)[1])
    np.testing.assert_array_equal(batch.r_t, np.full(8, 1.75, np.float32))
    np.testing.assert_array_equal(batch.discount_t, np.full(8, 0.25))
