"""Tests for zoo.configuration.protocols: atari100k's values, resolved."""

import pytest

from zoo.configuration import agent_registry
from zoo.configuration import protocols
from zoo.configuration import settings
from zoo.loops import jitted_loop
from zoo.loops import resume
from zoo.suites import atari_suite
from zoo.suites import minatar_suite

_ATARI = atari_suite.ATARI


def _resolve(preset='QR-DQN-1', suite=_ATARI, **values):
  return settings.resolve_settings(
      suite, agent_registry.presets()[preset],
      dict(protocol='atari100k', **values))


def test_atari100k_gives_der_gins_numbers():
  s = _resolve()
  settings.validate_settings(_ATARI, s)
  steps = lambda frames: frames / s.num_action_repeats
  assert s.num_iterations == 10 and steps(s.num_train_frames) == 10_000
  assert steps(s.max_frames_per_episode) == 27_000
  assert s.life_loss_ends_train_episode
  assert s.replay_capacity >= 100_000  # Every step of the run.
  assert s.min_replay_size() == 1_600
  assert steps(s.learn_period) == 1  # One update per agent step.
  # Target every 2,000 updates, updates one per agent step.
  assert s.target_network_update_period / s.learn_period == 2_000
  assert (s.exploration_epsilon_begin_value,
          s.exploration_epsilon_end_value) == (1.0, 0.01)
  assert steps(s.epsilon_decay_frames()) == 2_000
  assert steps(s.epsilon_begin_frame()) == 1_600
  assert s.eval_exploration_epsilon == 0.001
  assert (s.learning_rate, s.optimizer_epsilon) == (1e-4, 1.5e-4)
  assert s.max_global_grad_norm <= 0  # Dopamine's Adam clips nothing.
  assert s.batch_size == 32
  assert s.n_steps == 10
  assert (s.torso, s.hidden_size) == ('der', 256)
  assert (s.num_final_eval_episodes, s.num_eval_episodes) == (100, 10)
  assert s.protocol == 'atari100k'
  assert s.environment_mode == 'reference'  # One stream, the Python loop.


def test_the_cramer_losses_keep_their_2_over_n_rule_on_the_protocols_epsilon():
  s = _resolve('CR-DQN')
  assert s.optimizer_epsilon == pytest.approx(1.5e-4 * 2 / s.num_quantiles)
  s = _resolve('CR-IQN')
  assert s.optimizer_epsilon == pytest.approx(
      1.5e-4 * 2 / s.tau_samples_s_tm1)


def test_explicit_flags_win_over_the_protocol():
  s = _resolve(num_train_frames=400, num_iterations=2, torso='dqn',
               optimizer_epsilon=1e-3, num_final_eval_episodes=3,
               life_loss_ends_train_episode=False)
  assert (s.num_train_frames, s.num_iterations, s.torso) == (400, 2, 'dqn')
  assert s.optimizer_epsilon == 1e-3
  assert not s.life_loss_ends_train_episode
  assert s.num_final_eval_episodes == 3
  assert s.learning_rate == 1e-4  # Unset: still the protocol's.


def test_the_default_protocol_is_dqn_zoos_defaults():
  preset = agent_registry.presets()['QR-DQN-1']
  s = settings.resolve_settings(_ATARI, preset, {})
  assert s.protocol == 'dqn_zoo'
  assert s == settings.resolve_settings(_ATARI, preset,
                                        {'protocol': 'dqn_zoo'})
  assert (s.num_iterations, s.torso, s.num_eval_episodes) == (200, 'dqn', 0)
  assert not s.life_loss_ends_train_episode
  assert s.optimizer_epsilon == agent_registry.BASE_OPTIMIZER_EPSILON


def test_every_protocol_value_is_a_setting():
  for protocol in protocols.PROTOCOLS.values():
    assert set(protocol.values) <= set(settings.SETTINGS)


def test_a_resume_under_another_protocol_is_refused():
  saved = _resolve().checkpoint_config()
  current = settings.resolve_settings(
      _ATARI, agent_registry.presets()['QR-DQN-1'], {}).checkpoint_config()
  differences = resume.config_differences(saved, current)
  assert "--protocol='atari100k' in the checkpoint, 'dqn_zoo' now" in differences


def test_what_the_protocol_cannot_run_is_refused():
  s = _resolve(suite=minatar_suite.MINATAR, environment_name='breakout')
  with pytest.raises(settings.ConfigError, match='runs on the atari suite'):
    settings.validate_settings(minatar_suite.MINATAR, s)
  s = settings.resolve_settings(
      minatar_suite.MINATAR, agent_registry.presets()['QR-DQN-1'],
      dict(environment_name='breakout', torso='der'))
  with pytest.raises(settings.ConfigError, match='--torso=der is an Atari'):
    minatar_suite.MINATAR.validate(s)
  s = _resolve(num_envs=4)
  with pytest.raises(settings.ConfigError,
                     match='--life_loss_ends_train_episode runs in reference'):
    settings.validate_settings(_ATARI, s)
  s = _resolve(loop='jitted', life_loss_ends_train_episode=False)
  with pytest.raises(settings.ConfigError, match='needs --loop=python'):
    jitted_loop.check(_ATARI, s)
