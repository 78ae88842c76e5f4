"""Tests for zoo.configuration.settings_flags: the run flags come from the Settings fields."""

import dataclasses

from zoo.suites import minatar_suite
from zoo.configuration import settings
from zoo.configuration import settings_flags

FLAGS = settings_flags.FLAGS


def test_every_setting_is_a_flag_with_its_fields_default_and_help():
  for field in dataclasses.fields(settings.Settings):
    if field.name not in settings.SETTINGS:
      assert field.name in ('agent', 'suite')
      continue
    assert FLAGS[field.name].default == field.default, field.name
    assert FLAGS[field.name].help.endswith(field.metadata['help'])
  assert FLAGS['preset'].default is None
  # Counts accept 1e6.
  assert FLAGS['num_train_frames'].parser.parse('2.5e5') == 250_000


def test_values_from_flags_are_the_given_ones_and_the_suites_defaults():
  # Unset flags are left to resolve_settings (the protocol's, or defaults).
  assert set(settings_flags.values_from_flags()) <= set(settings.SETTINGS)
  before = FLAGS['num_iterations'].value
  try:
    FLAGS.num_iterations = 7
    assert settings_flags.values_from_flags()['num_iterations'] == 7
  finally:
    FLAGS['num_iterations'].value = before
    FLAGS['num_iterations'].using_default_value = True
  assert 'num_iterations' not in settings_flags.values_from_flags()
  before = {name: FLAGS[name].default
            for name in minatar_suite.MINATAR.flag_defaults}
  try:
    settings_flags.set_flag_defaults(minatar_suite.MINATAR)
    assert FLAGS['num_iterations'].default == 50
    assert FLAGS['hidden_size'].default == 128
  finally:
    for name, value in before.items():
      FLAGS.set_default(name, value)
  assert FLAGS['num_iterations'].default == 200


def test_seeds_from_flags():
  before = FLAGS['seeds'].value
  try:
    FLAGS['seeds'].value = None
    assert settings_flags.seeds_from_flags() is None
    FLAGS['seeds'].value = ['3', '1']
    assert settings_flags.seeds_from_flags() == [3, 1]
    for bad, message in ((['1', 'x'], 'give integers'),
                         (['1', '1'], 'repeats a seed')):
      FLAGS['seeds'].value = bad
      try:
        settings_flags.seeds_from_flags()
      except settings.ConfigError as e:
        assert message in str(e)
      else:
        raise AssertionError(f'--seeds={bad} accepted')
  finally:
    FLAGS['seeds'].value = before
