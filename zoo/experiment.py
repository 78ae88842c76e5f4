"""Run a quantile agent on a suite of games: the shared runner.

An agent package's entry point `<agent>/run_<suite>.py` hands its presets
(`<agent>/agent.py`) to `main(argv, suite, presets, default_preset)`. The run
resolves its settings once (zoo.settings), checks them and the checkpoint to
resume (zoo.resume) before any work, builds the agent (zoo.build) and runs the
iterations (zoo.run_loop) with progress, TensorBoard and interrupt hooks.
"""

import os
import sys
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence

from absl import logging
import jax

from zoo import agents
from zoo import build
from zoo import checkpoint
from zoo import interrupts
from zoo import progress
from zoo import resume
from zoo import results_csv
from zoo import run_json
from zoo import run_loop
from zoo import settings as settings_lib
from zoo import settings_flags
from zoo import suites
from zoo import tensorboard_writer

def _interrupted(signum: int, iteration: int, frame: int,
                 resume_iteration: Optional[int]) -> interrupts.Interrupted:
  """Return the exception whose message says where the run stopped."""
  name = interrupts.signal_name(signum)
  if resume_iteration is None:
    how = 'without --checkpoint_dir, a rerun starts over from iteration 0'
  else:
    how = ('rerun the same command to resume from iteration '
           f'{resume_iteration}')
  return interrupts.Interrupted(
      signum, f'Interrupted ({name}) at iteration {iteration}, frame {frame}; '
      f'{how}.')


class _InterruptCheck(run_loop.RunHooks):
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
      raise _interrupted(signum, self._iteration, self._agent.frame_t,
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
    raise _interrupted(signum, iteration, frame,
                       iteration if checkpointing else None)


def _finished(meta: Dict[str, Any], s: settings_lib.Settings
              ) -> List[Dict[str, Any]]:
  """Say that the run is complete and where its results are; return rows."""
  rows = meta['rows'][:s.num_iterations + 1]
  where = s.results_csv_path
  if where and not os.path.exists(where):
    results_csv.write_rows(where, rows)  # Deleted: rewrite it from the state.
  print(f'Run complete: iterations 0..{s.num_iterations} are in '
        f'{where or "the checkpoint (no --results_csv_path)"} (checkpoint '
        f'{checkpoint.latest(s.checkpoint_dir)}); nothing to do. To train '
        'longer, raise --num_iterations.', flush=True)
  return rows


def run(suite: suites.Suite, preset: agents.AgentPreset,
        values: Mapping[str, Any],
        make_environment: Optional[Callable] = None, restart: bool = False):
  """Validate the settings, then train/evaluate (or resume); return rows.

  Args:
    suite: the family of games.
    preset: the agent variant (its package's agent.py).
    values: flag values (zoo.settings.resolve_settings).
    make_environment: fn(iteration, phase) -> environment (default: the
      suite's).
    restart: move the run's files aside first (zoo.resume.restart).

  Raises:
    ConfigError: bad settings or checkpoint, before any long work.
    interrupts.Interrupted: a recorded SIGINT/SIGTERM (see zoo.interrupts),
      with a message saying where the run stopped and how to resume.
  """
  s = settings_lib.resolve_settings(suite, preset, values)
  settings_lib.validate_settings(suite, s)
  if s.loop != 'python':  # Another loop module runs it (Suite.loops).
    return suite.loops[s.loop](suite, preset, values, [s.seed],
                               restart=restart)[0]
  with resume.held([s]):
    return _run_python(suite, preset, s, make_environment, restart)


def _run_python(suite: suites.Suite, preset: agents.AgentPreset,
                s: settings_lib.Settings, make_environment: Optional[Callable],
                restart: bool):
  """Run (or resume) the Python loop once the run directory is held."""
  if restart:
    resume.restart(suite, s)
  found = resume.check_resume(s)
  meta = found.meta if found else None
  checkpointing = bool(s.checkpoint_dir)
  if meta is not None and meta['iteration'] > s.num_iterations:
    return _finished(meta, s)
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
  return run_loop.run_experiment(
      agent=agent, replay=replay, make_environment=make_environment,
      settings=s, environment_name=suite.csv_prefix + game,
      normalize=lambda score: suite.normalize(game, score),
      resume_from=found.path if found else None, hooks=hooks)


def run_seeds(suite: suites.Suite, preset: agents.AgentPreset,
              values: Mapping[str, Any], seeds: Sequence[int],
              restart: bool = False) -> List[List[Dict[str, Any]]]:
  """Run `seeds` with --loop's loop; return the rows of each seed.

  The Python loop runs them one after another; another loop of the suite
  (Suite.loops, e.g. zoo.jitted_loop) runs them as one group.
  """
  loop = values.get('loop', 'python')
  if loop == 'python':
    return [run(suite, preset, dict(values, seed=seed), restart=restart)
            for seed in seeds]
  settings_lib.validate_settings(suite, settings_lib.resolve_settings(
      suite, preset, dict(values, seed=seeds[0])))
  return suite.loops[loop](suite, preset, values, seeds, restart=restart)


def main(argv, suite: suites.Suite, presets: Sequence[agents.AgentPreset],
         default_preset: str) -> None:
  """Entry point of `python -m <agent>.run_<suite>`.

  Runs the preset --preset names (default: `default_preset`). Exits with a
  one-line message: 1 on bad settings, 128 + the signal (130, 143) on
  SIGINT/SIGTERM, which the entry points record from their start
  (zoo.interrupts).
  """
  if len(argv) > 1:
    sys.exit(f'Unexpected arguments: {argv[1:]}')
  try:
    preset = agents.pick(presets, default_preset,
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
