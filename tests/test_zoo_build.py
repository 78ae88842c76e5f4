"""Tests for zoo.loops.build: the agent and replay follow the settings."""

from zoo.configuration import agent_registry
from zoo.loops import build
from zoo.replay import device_replay
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
