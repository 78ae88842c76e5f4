"""Check every run's flags as the run parses them, before any run starts.

A typo in a campaign's flags would otherwise fail every run, one after the
other; here it is one error naming the run, the flag and the fix. The
run's own probes of its disk and device stay with the run, which may start
on another node.
"""

import copy
import dataclasses
from typing import Sequence

from absl import flags

from scripts.campaign import run_record
from zoo.configuration import cli
from zoo.configuration import count_flags
from zoo.configuration import settings as settings_lib

_DEFINE = {'string': flags.DEFINE_string, 'integer': flags.DEFINE_integer,
           'float': flags.DEFINE_float, 'bool': flags.DEFINE_bool,
           'enum': flags.DEFINE_enum, 'count': count_flags.DEFINE_count}


def run_flag_values(suite) -> flags.FlagValues:
  """Return new FlagValues with the flags of `<agent>.run_<suite>`: those of
  zoo.configuration.settings_flags, on their own FlagValues (the campaign's
  are absl's global ones)."""
  values = flags.FlagValues()
  for field in dataclasses.fields(settings_lib.Settings):
    if field.metadata:
      options = dict(field.metadata['options'])
      enum_values = ((options.pop('enum_values'),) if 'enum_values' in options
                     else ())
      _DEFINE[field.metadata['kind']](
          field.name, field.default, *enum_values, field.metadata['help'],
          flag_values=values, **options)
  flags.DEFINE_string('preset', None, '', flag_values=values)
  flags.DEFINE_bool('restart', False, '', flag_values=values)
  flags.DEFINE_list('seeds', None, '', flag_values=values)
  for flag in flags.FLAGS.get_flags_for_module('absl.logging'):
    flags.DEFINE_flag(copy.deepcopy(flag), values)
  for name, value in suite.flag_defaults.items():
    values.set_default(name, value)
  return values


def check(runs: Sequence[run_record.Run], root: str) -> None:
  """Raise ValueError naming the run and the fix unless every run's flags
  parse and its settings are valid (zoo.configuration.settings)."""
  # pylint: disable=g-import-not-at-top
  import jax  # The checks may build JAX environments: on the CPU, leaving
  jax.config.update('jax_platforms', 'cpu')  # the GPUs to the runs.
  from zoo.configuration import agent_registry
  from zoo.configuration import suites
  # pylint: enable=g-import-not-at-top
  checked = set()
  for run in runs:
    key = (run.agent, run.suite, run.game, run.flags, run.jitted)
    if key in checked:
      continue  # Runs that differ only in their seeds.
    checked.add(key)
    suite = suites.suite_by_name(run.suite)
    values = run_flag_values(suite)
    try:
      rest = values(['run'] + run.command(root)[3:])
    except flags.Error as e:
      raise ValueError(f'{run.name}: {cli.one_line(str(e))} (the runs\' flags: '
                       f'python -m {run.agent}.run_{run.suite} --help).'
                       ) from None
    if len(rest) > 1:
      raise ValueError(f'{run.name}: unexpected arguments {rest[1:]} among '
                       'its flags; give --name=value flags only.')
    given = {name: values[name].value for name in settings_lib.SETTINGS
             if values[name].present}
    try:
      preset = agent_registry.pick(
          agent_registry.package_presets(run.agent),
          agent_registry.default_preset(run.agent).name,
          values['preset'].value)
      settings_lib.validate_settings(suite, settings_lib.resolve_settings(
          suite, preset, given))
    except (ValueError, ImportError) as e:  # ConfigError among them.
      raise ValueError(f'{run.name}: {cli.one_line(str(e))}') from None
