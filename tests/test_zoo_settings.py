"""Tests for zoo.configuration.settings: one typed record, resolved from a preset and the
flags, validated in one place, stored as the same plain dict as before."""

import dataclasses

import pytest

from zoo.configuration import agent_registry
from zoo.suites import atari_suite
from zoo.suites import minatar_suite
from zoo.configuration import settings

_preset = agent_registry.default_preset


def test_the_settings_are_the_flags_plus_agent_and_suite():
  assert len(settings.SETTINGS) == 54
  assert settings.FIELDS == settings.SETTINGS + ('agent', 'suite')
  for name in settings.SETTINGS:
    help_text = settings.Settings.__dataclass_fields__[name].metadata['help']
    assert 'Issue' not in help_text and 'README' not in help_text


def test_the_preset_fills_what_the_flags_leave_unset():
  s = settings.resolve_settings(atari_suite.ATARI, _preset('nc_qr_dqn'), {})
  assert (s.head, s.loss, s.huber_param, s.scale_grad) == ('nc', 'qr', 1.0,
                                                           False)
  assert s.optimizer_epsilon == 0.01 / 32
  zero = agent_registry.presets()['NC-QR-DQN-0']
  s = settings.resolve_settings(atari_suite.ATARI, zero, {})
  assert (s.huber_param, s.scale_grad) == (0.0, True)
  assert s.optimizer_epsilon == pytest.approx(0.01 / 32 * 2 / 201)
  # A flag set explicitly wins over the preset: QR-DQN-1 with κ = 0 is
  # QR-DQN-0's settings.
  s = settings.resolve_settings(atari_suite.ATARI, _preset('qr_dqn'),
                                {'huber_param': 0.0})
  assert s == settings.resolve_settings(
      atari_suite.ATARI, agent_registry.presets()['QR-DQN-0'], {})
  smoothed = settings.resolve_settings(
      atari_suite.ATARI, agent_registry.presets()['CR-DQN-MQ'], {})
  assert (smoothed.loss, smoothed.smoothing_width) == ('multiquadric_cramer',
                                                      0.003)
  assert smoothed.optimizer_epsilon == pytest.approx(0.01 / 32 * 2 / 201)
  with pytest.raises(dataclasses.FrozenInstanceError):
    s.seed = 2


def test_paths_follow_the_one_run_directory_layout():
  s = settings.resolve_settings(minatar_suite.MINATAR, _preset('cr_dqn'),
                                {'seed': 4})
  run_dir = settings.run_dir('runs/minatar', 'cr_dqn', 'breakout', 4)
  assert run_dir == 'runs/minatar/cr_dqn/breakout/seed_4'
  assert s.results_csv_path == f'{run_dir}/{settings.RESULTS_FILE}'
  assert s.checkpoint_dir == f'{run_dir}/{settings.CHECKPOINT_DIR}'
  assert s.tensorboard_dir == f'{run_dir}/{settings.TENSORBOARD_DIR}'


def test_stored_settings_are_the_plain_dicts_of_before():
  s = settings.resolve_settings(atari_suite.ATARI, _preset('cr_dqn'), {})
  stored = s.as_dict()
  assert set(stored) == set(settings.SETTINGS) | {'agent', 'suite'}
  assert (stored['agent'], stored['suite']) == ('cr_dqn', 'atari')
  config = s.checkpoint_config()
  assert set(config) == set(stored) - set(settings.PATH_FLAGS) - set(
      settings.DISPLAY_FLAGS)
  assert settings.Settings.from_dict(stored) == s
  with pytest.raises(settings.ConfigError, match=r"Unknown settings \['x'\]"):
    settings.Settings.from_dict(dict(stored, x=1))


def test_stored_settings_without_n_steps_read_as_one_step_returns():
  s = settings.resolve_settings(atari_suite.ATARI, _preset('cr_dqn'),
                                {'n_steps': 3})
  stored = s.as_dict()
  assert stored['n_steps'] == 3
  del stored['n_steps']  # As written before the setting existed.
  assert settings.Settings.from_dict(stored) == dataclasses.replace(
      s, n_steps=1)


@pytest.mark.parametrize('values,message', [
    ({'num_iterations': -1}, '--num_iterations must be >= 0, got -1.'),
    ({'huber_param': -1.0}, '--huber_param must be >= 0'),
    ({'smoothing_width': -0.1}, '--smoothing_width must be >= 0'),
    ({'smoothing_width': 0.1}, r'--smoothing_width=0.1 with --loss=cramer'),
    ({'smoothing_width': 0.1}, 'only --loss=multiquadric_cramer reads it'),
    ({'loss': 'multiquadric_cramer'}, 'that loss needs --smoothing_width > 0'),
    ({'learning_rate': 0.0}, '--learning_rate must be positive'),
    ({'eval_exploration_epsilon': 2.0}, '--eval_exploration_epsilon must lie'),
    ({'replay_capacity': 8, 'num_envs': 4, 'min_replay_capacity_fraction': 1,
      'batch_size': 1}, '--replay_capacity must hold at least 5 steps'),
    ({'n_steps': 0}, r'--n_steps must be >= 1 \(1: one-step returns\), got 0'),
    ({'replay_capacity': 100, 'num_envs': 10, 'n_steps': 7,
      'min_replay_capacity_fraction': 1, 'batch_size': 1},
     r'at least 11 steps per stream \(--num_stacked_frames \+ --n_steps\)'),
])
def test_bad_values_are_named_with_their_fix(values, message):
  s = settings.resolve_settings(atari_suite.ATARI, _preset('cr_dqn'), dict(
      values, results_csv_path='', checkpoint_dir=''))
  with pytest.raises(settings.ConfigError, match=message):
    settings.validate_settings(atari_suite.ATARI, s)


def test_the_last_iteration_evaluates_its_own_number_of_episodes():
  s = settings.Settings(num_iterations=10, num_eval_episodes=10,
                            num_final_eval_episodes=100)
  assert [s.eval_episodes(i) for i in (0, 1, 9, 10)] == [
      10, 10, 10, 100]
  s = settings.Settings(num_iterations=10, num_eval_episodes=0,
                            num_final_eval_episodes=0)
  assert s.eval_episodes(10) == 0  # The frame budget.
