"""Run a quantile agent on a suite of games: the shared runner.

`<agent>/run_<suite>.py` hands its presets to `main`. Settings, the loop's
limits, files, disk and device are checked before any work; the seeds run
through zoo.loops.driver with zoo.loops.<loop>_loop's adapter.
"""

import importlib
import os
import shutil
import sys
from typing import (Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

from absl import logging
import jax

from zoo.configuration import agent_registry
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags
from zoo.configuration import suites
from zoo.loops import driver
from zoo.loops import interrupts
from zoo.loops import resume
from zoo.replay import frame_replay as replay_lib
from zoo.storage import checkpoint
from zoo.storage import files
from zoo.storage import run_directory


def _loop_module(name: str):
  """Return the module of --loop=`name` (zoo.loops.<name>_loop)."""
  return importlib.import_module(f'zoo.loops.{name}_loop')


def run(suite: suites.Suite, preset: agent_registry.AgentPreset,
        values: Mapping[str, Any], restart: bool = False, **loop_options):
  """Check the settings, then run (or resume) one seed; return its rows.

  Raises:
    ConfigError: bad settings or checkpoint, before any long work.
    interrupts.Interrupted: a recorded SIGINT/SIGTERM (where to resume).
  """
  seed = values.get('seed', settings_lib.Settings.seed)
  return run_seeds(suite, preset, values, [seed], restart, **loop_options)[0]


def _check_writable(directory: str, what: str) -> None:
  try:
    files.check_writable_directory(directory)
  except OSError as e:
    raise settings_lib.ConfigError(
        f'Cannot write the {what} in {directory!r} ({e}); pass a writable '
        'path.') from e


def check_resources(suite: suites.Suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the run cannot write its files or hold its replay."""
  if s.replay_on_device:
    _check_replay_fits_on_device(suite, s)
  if s.results_csv_path:
    if os.path.isdir(s.results_csv_path):
      raise settings_lib.ConfigError(
          f'--results_csv_path={s.results_csv_path} is a directory; pass a '
          'file path, e.g. '
          f'{os.path.join(s.results_csv_path, settings_lib.RESULTS_FILE)}.')
    _check_writable(os.path.dirname(os.path.abspath(s.results_csv_path)),
                    'results CSV')
  for name, what in (('checkpoint_dir', 'checkpoints'),
                     ('tensorboard_dir', 'TensorBoard events')):
    path = getattr(s, name)
    if path:
      if os.path.isfile(path):
        raise settings_lib.ConfigError(
            f'--{name}={path} is a file; pass a directory '
            f"(or --{name}='' for no {what}).")
      _check_writable(path, what)
  if s.checkpoint_dir:
    check_checkpoint_disk(suite, s)


def _frame_shape(suite, s: settings_lib.Settings) -> Tuple[int, ...]:
  return tuple(suite.observation_shape(s))[:-1]


def replay_checkpoint_bytes(suite, s: settings_lib.Settings) -> int:
  """Return the most replay bytes a run's checkpoints hold on disk at once.

  As many transitions as the run's loop says (`checkpoint_transitions`).
  """
  transitions = _loop_module(s.loop).checkpoint_transitions(s)
  return replay_lib.replay_bytes(transitions, _frame_shape(suite, s))


def check_checkpoint_disk(suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the checkpoint disk cannot hold the run's replay."""
  directory = s.checkpoint_dir
  needed = replay_checkpoint_bytes(suite, s)
  replay_dir = os.path.join(directory, checkpoint.REPLAY_DIR)
  saved = 0  # A resumed run's chunks are on the disk already.
  for root, _, names in os.walk(replay_dir):
    saved += sum(os.path.getsize(os.path.join(root, n)) for n in names)
  existing = os.path.abspath(directory)
  while not os.path.isdir(existing):  # Made by the first save.
    existing = os.path.dirname(existing)
  free = shutil.disk_usage(existing).free
  if needed - saved > free:
    per_transition = replay_lib.replay_bytes(1, _frame_shape(suite, s))
    raise settings_lib.ConfigError(
        f'The disk of --checkpoint_dir={directory} has {free / 1e9:.2f} GB '
        f'free; this run\'s checkpoints need {needed / 1e9:.2f} GB for the '
        f'replay ({needed // per_transition:,} transitions of '
        f'{per_transition:,} B, as --loop={s.loop} saves them), of which '
        f'{saved / 1e9:.2f} GB are already saved. Free some '
        'space, pass a --checkpoint_dir on a larger disk, lower '
        "--replay_capacity, or pass --checkpoint_dir='' (no checkpoints: the "
        'run cannot resume).')


def _check_replay_fits_on_device(suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the device has too little memory for the replay."""
  stats = jax.devices()[0].memory_stats() or {}
  limit = stats.get('bytes_limit')
  if not limit:  # The CPU reports none.
    return
  needed = replay_lib.replay_bytes(s.replay_capacity, _frame_shape(suite, s))
  if needed > 0.8 * limit:
    raise settings_lib.ConfigError(
        f'--replay_on_device: the replay needs {needed / 1e9:.1f} GB, more '
        f'than 80% of the {limit / 1e9:.1f} GB of {jax.devices()[0]}; lower '
        '--replay_capacity or drop --replay_on_device.')


def resolve_runs(suite: suites.Suite, preset: agent_registry.AgentPreset,
                 values: Mapping[str, Any], seeds: Sequence[int]
                 ) -> List[settings_lib.Settings]:
  """Return each seed's settings, resolved and validated (the one check).

  Raises ConfigError: a bad setting, or two seeds writing to one place.
  """
  runs = [settings_lib.resolve_settings(suite, preset, dict(values, seed=seed))
          for seed in seeds]
  paths = [p for s in runs for p in (s.results_csv_path, s.checkpoint_dir,
                                     s.tensorboard_dir) if p]
  if len(set(paths)) < len(paths):
    raise settings_lib.ConfigError(
        'Two seeds would write to the same place: keep {seed} in '
        '--results_csv_path (and --checkpoint_dir, --tensorboard_dir where '
        'given).')
  for s in runs:  # Each seed's paths are checked (they differ by seed).
    settings_lib.validate_settings(suite, s)
    _loop_module(s.loop).check(suite, s)
    check_resources(suite, s)
  return runs


def run_seeds(suite: suites.Suite, preset: agent_registry.AgentPreset,
              values: Mapping[str, Any], seeds: Sequence[int],
              restart: bool = False, log: Callable[..., None] = logging.info,
              extra_hooks: Optional[Sequence] = None, **loop_options
              ) -> List[List[Dict[str, Any]]]:
  """Run `seeds` with --loop's loop; return the rows of each seed.

  One group per seed, or one group of all where the loop vmaps them;
  `restart` moves the runs' files aside once their directories are held.

  Args:
    log: where the run's lines go (progress, resume, finished).
    extra_hooks: per seed, hooks after the default ones.
    **loop_options: to the loop's make (tests' environments).
  """
  runs = resolve_runs(suite, preset, values, seeds)
  module = _loop_module(runs[0].loop)
  groups = ([list(range(len(runs)))] if module.vmaps_seeds(suite) else
            [[index] for index in range(len(runs))])
  game = runs[0].environment_name
  rows = [None] * len(runs)
  with resume.held(runs):
    if restart:
      for s in runs:
        run_directory.restart(s.results_csv_path, s.checkpoint_dir,
                              s.tensorboard_dir)
        check_resources(suite, s)  # Its directories anew.
    for group in groups:
      group_runs = [runs[i] for i in group]
      group_rows = driver.run(
          group_runs,
          lambda: module.make(suite, preset, group_runs, **loop_options),
          environment_name=suite.csv_prefix + game,
          normalize=lambda score: suite.normalize(game, score),
          extra_hooks=(None if extra_hooks is None else
                       [extra_hooks[i] for i in group]),
          log=log)
      for i, seed_rows in zip(group, group_rows):
        rows[i] = seed_rows
  return rows


def main(argv, suite: suites.Suite,
         presets: Sequence[agent_registry.AgentPreset],
         default_preset: str) -> None:
  """Entry point of `python -m <agent>.run_<suite>`: runs --preset's preset.

  Exits with one line: 1 on bad settings, 128 + the signal on SIGINT/SIGTERM.
  """
  del argv  # Flags only: zoo.configuration.cli.run refused the rest.
  try:
    preset = agent_registry.pick(presets, default_preset,
                         settings_flags.FLAGS.preset)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  try:
    values = settings_flags.values_from_flags()
    seeds = settings_flags.seeds_from_flags() or [
        values.get('seed', settings_lib.default_settings(suite)['seed'])]
    run_seeds(suite, preset, values, seeds,
              restart=settings_flags.FLAGS.restart)
  except (settings_lib.ConfigError, checkpoint.DamagedError,
          checkpoint.WriteError) as e:
    sys.exit(f'Error: {e}')
  except interrupts.Interrupted as e:
    print(e.message, file=sys.stderr, flush=True)
    sys.exit(e.exit_status)
