"""The run flags: one per field of settings.Settings, plus --preset.

Entry points adopt them (`flags.adopt_module_key_flags`) for --help.
"""

import dataclasses
from typing import Any, Dict

from absl import flags

from zoo.configuration import count_flags
from zoo.configuration import settings as settings_lib

FLAGS = flags.FLAGS

_DEFINE = {
    'string': flags.DEFINE_string,
    'integer': flags.DEFINE_integer,
    'float': flags.DEFINE_float,
    'bool': flags.DEFINE_bool,
    'enum': lambda name, default, help_text, enum_values: flags.DEFINE_enum(
        name, default, enum_values, help_text),
    'count': count_flags.DEFINE_count,
}


def _define_all() -> None:
  for field in dataclasses.fields(settings_lib.Settings):
    if field.metadata:
      _DEFINE[field.metadata['kind']](field.name, field.default,
                                      field.metadata['help'],
                                      **field.metadata['options'])


_define_all()
flags.DEFINE_string('preset', None,
                    "The agent's named variant (its package's agent.py); "
                    "unset: the package's default.")
# Not a setting: what to do with the run's files, not what the run computes.
flags.DEFINE_bool(
    'restart', False,
    'Start the run over at iteration 0: the results CSV, run.json, the '
    'checkpoint and TensorBoard directories move aside to '
    '<name>.<time>.bak (nothing is deleted). Needed only where going on '
    'would replace finished CSV rows.')
# Not a setting: which runs to start (each run's settings hold its --seed).
flags.DEFINE_list(
    'seeds', None, 'Run these seeds (e.g. 1,2,3), one run directory each, '
    'instead of --seed: one after another, except where --loop=jitted vmaps '
    'them in one process (MinAtar). Unset: --seed.')


def values_from_flags() -> Dict[str, Any]:
  """Return the values of the settings' flags given on the command line.

  The others are left to `settings.resolve_settings`: the protocol's
  value, else the suite's default (so that an explicit flag wins).
  """
  return {name: FLAGS[name].value for name in settings_lib.SETTINGS
          if FLAGS[name].present or not FLAGS[name].using_default_value}


def seeds_from_flags():
  """Return the --seeds as integers (None: unset); ConfigError if bad."""
  given = FLAGS['seeds'].value
  if not given:
    return None
  try:
    seeds = [int(x) for x in given]
  except ValueError as e:
    raise settings_lib.ConfigError(
        f'--seeds={",".join(given)}: give integers, e.g. --seeds=1,2,3.'
    ) from e
  if len(set(seeds)) != len(seeds):
    raise settings_lib.ConfigError(f'--seeds={",".join(given)} repeats a seed.')
  return seeds


def set_flag_defaults(suite) -> None:
  """Make the suite's defaults the flags' (before parsing, for --help)."""
  for name, value in suite.flag_defaults.items():
    FLAGS.set_default(name, value)
