"""Run a quantile agent on a suite of games: the shared runner.

An agent package's entry point `<agent>/run_<suite>.py` hands its presets
(`<agent>/agent.py`) to `main(argv, suite, presets, default_preset)`. The run
resolves its settings once (zoo.configuration.settings), checks them and the checkpoint to
resume (zoo.loops.resume) before any work, builds the agent (zoo.loops.build) and runs the
iterations (zoo.loops.python_loop) with progress, TensorBoard and interrupt hooks.
"""

import os
import shutil
import sys
from typing import (Any, Callable, Dict, List, Mapping, Optional, Sequence,
                    Tuple)

from absl import logging
import jax

from zoo.configuration import agent_registry
from zoo.loops import build
from zoo.storage import checkpoint
from zoo.storage import files
from zoo.loops import interrupts
from zoo.loops import progress
from zoo.replay import frame_replay as replay_lib
from zoo.loops import resume
from zoo.storage import run_directory
from zoo.storage import run_json
from zoo.loops import python_loop
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags
from zoo.configuration import suites
from zoo.loops import tensorboard_writer

class _InterruptCheck(python_loop.RunHooks):
  """Stop the run at a safe point once SIGINT or SIGTERM was recorded."""

  def __init__(self, checkpointing: bool):
    self._checkpointing = checkpointing
    self._agent = None
    self._iteration = 0
    self._resume = 0 if checkpointing else None

  def begin_run(self, start_iteration: int, agent, rows) -> None:
    self._agent, self._iteration = agent, start_iteration
    if self._checkpointing:
      self._resume = start_iteration
    self.on_step(0)

  def begin_iteration(self, iteration: int) -> None:
    self._iteration = iteration

  def on_step(self, frames: int) -> None:
    signum = interrupts.pending()
    if signum is not None:
      raise resume.interrupted(signum, self._iteration, self._agent.frame_t,
                               self._resume)

  def end_iteration(self, iteration: int, row: Dict[str, Any]) -> None:
    if self._checkpointing:
      self._resume = iteration + 1
    self.on_step(0)


def _check_set_up(meta: Optional[Dict[str, Any]], checkpointing: bool) -> None:
  """A safe point during set-up: raise Interrupted if a signal came."""
  signum = interrupts.pending()
  if signum is not None:
    iteration = meta['iteration'] if meta else 0
    frame = meta['rows'][-1]['frame'] if meta and meta['rows'] else 0
    raise resume.interrupted(signum, iteration, frame,
                             iteration if checkpointing else None)


def run(suite: suites.Suite, preset: agent_registry.AgentPreset,
        values: Mapping[str, Any],
        make_environment: Optional[Callable] = None, restart: bool = False):
  """Validate the settings, then train/evaluate (or resume); return rows.

  Args:
    suite: the family of games.
    preset: the agent variant (its package's agent.py).
    values: flag values (zoo.configuration.settings.resolve_settings).
    make_environment: fn(iteration, phase) -> environment (default: the
      suite's).
    restart: move the run's files aside first (zoo.storage.run_directory.restart).

  Raises:
    ConfigError: bad settings or checkpoint, before any long work.
    interrupts.Interrupted: a recorded SIGINT/SIGTERM (see zoo.loops.interrupts),
      with a message saying where the run stopped and how to resume.
  """
  seed = values.get('seed', settings_lib.Settings.seed)
  options = {'make_environment': make_environment} if make_environment else {}
  return run_seeds(suite, preset, values, [seed], restart, **options)[0]


def _run_python(suite: suites.Suite, preset: agent_registry.AgentPreset,
                s: settings_lib.Settings,
                make_environment: Optional[Callable] = None):
  """Run (or resume) one held seed with the Python loop (zoo.loops.python_loop)."""
  found = resume.check_resume(s)
  meta = found.meta if found else None
  checkpointing = bool(s.checkpoint_dir)
  if meta is not None and meta['iteration'] > s.num_iterations:
    return resume.finished([s], [meta['rows']],
                           lambda line: print(line, flush=True))[0]
  _check_set_up(meta, checkpointing)
  if s.results_csv_path:
    run_json.write(s.results_csv_path, s.agent, s.suite, s.as_dict())
  logging.info('%s (%s) on %s (%s); JAX device: %s', preset.name, s.agent,
               s.suite, s.environment_name, jax.devices()[0])
  if make_environment is None:
    make_environment = build.make_environment_factory(suite, s)
  probe = make_environment(0, 'eval')
  num_actions = probe.num_actions
  probe.close()
  logging.info('Settings: %s', s.checkpoint_config())
  _check_set_up(meta, checkpointing)
  agent, replay = build.build_agent(suite, s, num_actions)
  logging.info('Replay: %d transitions in %d streams, %.2f GB when full.',
               replay.capacity, replay.num_streams, replay.nbytes / 1e9)
  _check_set_up(meta, checkpointing)
  hooks = [progress.Progress(
      num_iterations=s.num_iterations, num_train_frames=s.num_train_frames,
      num_eval_frames=s.num_eval_frames,
      interval_seconds=s.progress_interval_seconds)]
  if s.tensorboard_dir:
    hooks.append(tensorboard_writer.TensorBoardWriter(
        s.tensorboard_dir, s.tensorboard_loss_period))
  hooks.append(_InterruptCheck(checkpointing))
  game = s.environment_name
  return python_loop.run_experiment(
      agent=agent, replay=replay, make_environment=make_environment,
      settings=s, environment_name=suite.csv_prefix + game,
      normalize=lambda score: suite.normalize(game, score),
      resume_from=found.path if found else None, hooks=hooks)


def _check_writable(directory: str, what: str) -> None:
  try:
    files.check_writable_directory(directory)
  except OSError as e:
    raise settings_lib.ConfigError(
        f'Cannot write the {what} in {directory!r} ({e}); pass a writable '
        'path.') from e


def check_resources(suite: suites.Suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the run cannot write its files or hold its replay.

  The runner's probes of the files, the disk and the device, after
  zoo.configuration.settings.validate_settings checked the values; they make nothing.
  """
  if s.replay_on_device:
    _check_replay_fits_on_device(suite, s)
  if s.results_csv_path:
    if os.path.isdir(s.results_csv_path):
      raise settings_lib.ConfigError(
          f'--results_csv_path={s.results_csv_path} is a directory; pass a '
          f'file path, e.g. {os.path.join(s.results_csv_path, settings_lib.RESULTS_FILE)}.')
    _check_writable(os.path.dirname(os.path.abspath(s.results_csv_path)),
                    'results CSV')
  for name, what in (('checkpoint_dir', 'checkpoints'),
                     ('tensorboard_dir', 'TensorBoard events')):
    path = getattr(s, name)
    if path:
      if os.path.isfile(path):
        raise settings_lib.ConfigError(f'--{name}={path} is a file; pass a directory '
                          f"(or --{name}='' for no {what}).")
      _check_writable(path, what)
  if s.checkpoint_dir:
    check_checkpoint_disk(suite, s)


def _frame_shape(suite, s: settings_lib.Settings) -> Tuple[int, ...]:
  return tuple(suite.observation_shape(s))[:-1]


def replay_checkpoint_bytes(suite, s: settings_lib.Settings) -> int:
  """Return the most replay bytes a run's checkpoints hold on disk at once.

  A full replay plus one iteration's new steps (written before the steps
  they replace are deleted), or the whole run's steps if fewer.
  """
  steps_per_iteration = -(-s.num_train_frames // s.num_action_repeats)
  transitions = min(s.replay_capacity + steps_per_iteration,
                    s.num_iterations * steps_per_iteration)
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
        f'{per_transition:,} B: --replay_capacity plus one iteration\'s new '
        f'steps), of which {saved / 1e9:.2f} GB are already saved. Free some '
        'space, pass a --checkpoint_dir on a larger disk, lower '
        "--replay_capacity, or pass --checkpoint_dir='' (no checkpoints: the "
        'run cannot resume).')


def _check_replay_fits_on_device(suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the device reports too little memory for the replay."""
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

  Raises:
    ConfigError: a bad setting, or two seeds writing to one place.
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
    check_resources(suite, s)
  return runs


def run_seeds(suite: suites.Suite, preset: agent_registry.AgentPreset,
              values: Mapping[str, Any], seeds: Sequence[int],
              restart: bool = False, **loop_options
              ) -> List[List[Dict[str, Any]]]:
  """Run `seeds` with --loop's loop; return the rows of each seed.

  Resolves and checks every seed's settings (resolve_runs), holds their run
  directories (zoo.loops.resume.held), moves their files aside with `restart`
  (zoo.storage.run_directory.restart), then dispatches --loop, the one place where
  it is: the Python loop runs the seeds one after another; another loop of
  the suite (Suite.loops, e.g. zoo.loops.jitted_loop.run) gets their settings as
  one group. `loop_options` go to the loop (tests: the Python loop's
  make_environment, the jitted loop's env and log).
  """
  runs = resolve_runs(suite, preset, values, seeds)
  with resume.held(runs):
    if restart:
      for s in runs:
        run_directory.restart(s.results_csv_path, s.checkpoint_dir,
                              s.tensorboard_dir)
        check_resources(suite, s)  # Its directories anew.
    loop = runs[0].loop
    if loop == 'python':
      return [_run_python(suite, preset, s, **loop_options) for s in runs]
    return suite.loops[loop](suite, preset, runs, **loop_options)


def main(argv, suite: suites.Suite, presets: Sequence[agent_registry.AgentPreset],
         default_preset: str) -> None:
  """Entry point of `python -m <agent>.run_<suite>`.

  Runs the preset --preset names (default: `default_preset`). Exits with a
  one-line message: 1 on bad settings, 128 + the signal (130, 143) on
  SIGINT/SIGTERM, which the entry points record from their start
  (zoo.loops.interrupts).
  """
  if len(argv) > 1:
    sys.exit(f'Unexpected arguments: {argv[1:]}')
  try:
    preset = agent_registry.pick(presets, default_preset,
                         settings_flags.FLAGS.preset)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  try:
    values = settings_flags.values_from_flags()
    seeds = settings_flags.seeds_from_flags() or [values['seed']]
    run_seeds(suite, preset, values, seeds,
              restart=settings_flags.FLAGS.restart)
  except (settings_lib.ConfigError, checkpoint.DamagedError,
          checkpoint.WriteError) as e:
    sys.exit(f'Error: {e}')
  except interrupts.Interrupted as e:
    print(e.message, file=sys.stderr, flush=True)
    sys.exit(e.exit_status)
