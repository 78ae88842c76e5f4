"""Integer flags for counts: '1000000', '1_000_000', '1e6' or '2.5e5'.

'1.5' and '1e-3' are refused.
"""

import decimal
from typing import Optional

from absl import flags

# Flags defined through DEFINE_count belong to the module that calls it (its
# --help lists them), not to this one.
flags.disclaim_key_flags()


class CountParser(flags.IntegerParser):
  """Parse an integer count written as '1000000', '1_000_000' or '1e6'."""

  syntactic_help = "an integer: 1000000, 1_000_000 or 1e6"

  def convert(self, argument) -> int:
    if not isinstance(argument, str):
      return super().convert(argument)
    try:
      value = decimal.Decimal(argument.replace('_', ''))
    except decimal.InvalidOperation:
      value = decimal.Decimal('NaN')
    if not value.is_finite() or value != value.to_integral():
      raise ValueError(f'{argument!r} is not an integer count (write it as '
                       '1000000, 1_000_000 or 1e6)')
    return int(value)


def DEFINE_count(  # pylint: disable=invalid-name,redefined-builtin
    name: str, default: Optional[int], help: str,
    flag_values: flags.FlagValues = flags.FLAGS):
  """Define an integer flag that also accepts '1e6'."""
  return flags.DEFINE(CountParser(), name, default, help,
                      flag_values=flag_values,
                      serializer=flags.ArgumentSerializer())
