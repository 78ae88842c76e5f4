"""Tests for zoo.configuration.count_flags: integer counts written as 1e6."""

from absl import flags
import pytest

from zoo.configuration import count_flags


@pytest.mark.parametrize('text,value', [
    ('1000000', 1_000_000), ('1_000_000', 1_000_000), ('1e6', 1_000_000),
    ('2.5e5', 250_000), ('4E4', 40_000), ('-3', -3), ('0', 0),
    ('123456789012345678901', 123456789012345678901),  # Exact, no float.
])
def test_integer_values_in_any_notation_are_accepted(text, value):
  assert count_flags.CountParser().parse(text) == value


@pytest.mark.parametrize('text', ['1.5', '1e-3', '2.5e0', 'inf', 'nan', '1e6x',
                                  '', 'one'])
def test_non_integers_are_refused_naming_the_value(text):
  with pytest.raises(ValueError, match='is not an integer count'):
    count_flags.CountParser().parse(text)


def test_defined_flags_parse_and_belong_to_the_defining_module():
  values = flags.FlagValues()
  count_flags.DEFINE_count('frames', 10, 'Frames.', flag_values=values)
  values(['prog', '--frames=1e3'])
  assert values.frames == 1000 and values['frames'].default == 10
  with pytest.raises(flags.IllegalFlagValueError, match='1.5'):
    values(['prog', '--frames=1.5'])
  # Key flags of this test module (its caller), not of zoo.configuration.count_flags.
  assert [f.name for f in values.get_key_flags_for_module(__name__)] == [
      'frames']
