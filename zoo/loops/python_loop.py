"""The iteration loop shared by every agent: phases, CSV rows, checkpoints.

Iteration 0 evaluates only; each later iteration trains `num_train_frames`
then evaluates `num_eval_frames`. Every evaluation runs on a fresh environment
seeded from (seed, iteration, 'eval'). Training runs on zoo.loops.train_streams: with
K = 1 a fresh environment of (seed, iteration, 'train') per phase (DQN Zoo);
with K > 1 streams made at the first training phase that go on across phases
(docs/training-streams.md). After each iteration the CSV is rewritten
atomically and a checkpoint is saved; a rerun with the same checkpoint
directory resumes (exactly at K = 1; at K > 1 with fresh training streams).
"""

import time
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import logging
import numpy as np

from zoo.storage import checkpoint
from zoo.storage import checkpoint_read
from zoo.environments import environment
from zoo.loops import phase_accounting
from zoo.storage import results_csv
from zoo.loops import resume
from zoo.configuration import settings as settings_lib
from zoo.loops import train_streams as train_streams_lib

PHASES = ('train', 'eval')


def environment_seed(seed: int, iteration: int, phase: str) -> int:
  """Return the seed of the environment of one phase of one iteration."""
  state = np.random.SeedSequence([seed, iteration, PHASES.index(phase)])
  return int(state.generate_state(1)[0] % (2**31 - 1))


def run_phase(env: environment.BatchedEnvironment,
              act: Callable[[environment.BatchedTimeStep], np.ndarray],
              num_frames: int, num_action_repeats: int, *,
              whole_episodes: bool = False,
              on_step: Optional[Callable[[int], None]] = None
              ) -> phase_accounting.PhaseStats:
  """Run `act` on every stream of a fresh environment for one phase.

  Counted by zoo.loops.phase_accounting: the budget rule (evaluation at K = 1,
  DQN Zoo's) or whole episodes (evaluation at K > 1; a ratio estimator of
  the mean return, docs/environments.md).

  Args:
    env: the phase's (fresh) environment.
    act: fn(timestep) -> [K] actions (the agent's step or eval_step).
    num_frames: the phase's frame budget (positive).
    num_action_repeats: frames per agent step.
    whole_episodes: the rule, above.
    on_step: called after every step with the frames counted so far (progress
      reports, interrupt checks); it may raise to abandon the phase.

  Raises:
    ValueError: if num_frames is not positive.
  """
  if num_frames <= 0:
    raise ValueError(f'A phase needs a positive frame budget, got {num_frames}.')
  start = time.perf_counter()
  _, tally = phase_accounting.run_steps(
      env.reset(), env.step, act,
      phase_accounting.start(np.zeros(env.num_envs, np.float64)), num_frames,
      num_action_repeats, whole_episodes, on_step)
  return phase_accounting.phase_stats(tally, time.perf_counter() - start)


class RunHooks:
  """What a run reports to (progress, TensorBoard, interrupt checks).

  Every method is a no-op here; subclasses override what they need. The
  order within an iteration: begin_iteration, then per phase begin_phase,
  on_step after every environment step (may raise to stop the run),
  end_phase; then end_iteration once the CSV row and the checkpoint are
  written. end_run is called however the run ends.
  """

  def begin_run(self, start_iteration: int, agent,
                rows: Sequence[Dict[str, Any]]) -> None:
    """The run (re)starts at `start_iteration`: (restored) agent, CSV rows."""

  def begin_iteration(self, iteration: int) -> None:
    pass

  def begin_phase(self, iteration: int, phase: str) -> None:
    pass

  def on_step(self, frames: int) -> None:
    """`frames` counted so far in the phase; keep it cheap."""

  def end_phase(self, iteration: int, phase: str,
                stats: phase_accounting.PhaseStats) -> None:
    pass

  def end_iteration(self, iteration: int, row: Dict[str, Any]) -> None:
    pass

  def end_run(self) -> None:
    pass


def _save(s: settings_lib.Settings, iteration: int, rows, agent, replay,
          saved_until: int, streams: train_streams_lib.TrainStreams) -> int:
  """Checkpoint the run after `iteration`; return the replay steps saved.

  Only the replay steps added since `saved_until` (the previous save's) are
  written; the older ones are already on disk.
  """
  end = replay.num_steps
  keep_from = max(end - replay.capacity // replay.num_streams, 0)
  meta = resume.checkpoint_meta(
      s, iteration, rows, replay=replay.get_state(),
      **{train_streams_lib.META_KEY: streams.get_state()})
  checkpoint.save(s.checkpoint_dir, iteration, meta, agent.get_state(),
                  new_steps=replay.steps(max(saved_until, keep_from), end),
                  keep_steps_from=keep_from)
  return end


def _restore(path: str, agent, replay) -> Tuple[int, List[Dict], int]:
  """Restore agent and replay; return (next iteration, rows, steps saved)."""
  saved = checkpoint_read.load(path, agent.get_state())
  agent.set_state(saved.tree)
  replay.set_state(saved.meta['replay'])
  held_from = max(replay.num_steps - replay.capacity // replay.num_streams, 0)
  saved_until = held_from
  for begin, arrays in saved.replay_chunks:
    replay.put_steps(begin, arrays)
    saved_until = begin + arrays['frames'].shape[1]
  if saved_until != replay.num_steps:
    raise ValueError(f'Checkpoint {path} holds replay steps up to '
                     f'{saved_until}, its counters say {replay.num_steps}.')
  return saved.meta['iteration'], saved.meta['rows'], saved_until


def _hooked_phase(hooks: Sequence[RunHooks], iteration: int, phase: str,
                  run: Callable[[Any], phase_accounting.PhaseStats]
                  ) -> phase_accounting.PhaseStats:
  """Return run(on_step)'s phase, telling the hooks of it."""
  for hook in hooks:
    hook.begin_phase(iteration, phase)

  def on_step(frames):
    for hook in hooks:
      hook.on_step(frames)

  stats = run(on_step if hooks else None)
  for hook in hooks:
    hook.end_phase(iteration, phase, stats)
  return stats


def _evaluate(env: environment.BatchedEnvironment, act, num_frames: int,
              num_action_repeats: int, on_step) -> phase_accounting.PhaseStats:
  """Evaluate on a fresh environment, whole episodes at K > 1; close it."""
  try:
    return run_phase(env, act, num_frames, num_action_repeats,
                     whole_episodes=env.num_envs > 1, on_step=on_step)
  finally:
    env.close()


def run_experiment(
    *,
    agent,
    replay,
    make_environment: Callable[[int, str], environment.BatchedEnvironment],
    settings: settings_lib.Settings,
    environment_name: str,
    normalize: Callable[[float], float],
    resume_from: Optional[str] = None,
    hooks: Sequence[RunHooks] = (),
) -> List[Dict[str, Any]]:
  """Run (or resume) iterations 0..num_iterations; return the CSV rows.

  Args:
    agent: a zoo.agent.quantile_agent.QuantileAgent (step, eval_step, statistics, state).
    replay: the agent's replay (checkpointed with it).
    make_environment: fn(iteration, phase) -> fresh BatchedEnvironment
      (training with K > 1 streams keeps the first one made; see
      zoo.loops.train_streams).
    settings: the run's settings: iterations, frames per phase and per step,
      the CSV's agent and seed, where the CSV and checkpoints go, and the
      checkpoints' config.
    environment_name: the CSV's environment_name column.
    normalize: eval return -> human-normalised score.
    resume_from: a checkpoint to restore first, already checked against the
      settings (zoo.loops.resume.check_resume); None: start at iteration 0.
    hooks: RunHooks told of the run's progress (in this order).
  """
  s = settings
  num_iterations, num_action_repeats = s.num_iterations, s.num_action_repeats
  num_train_frames, num_eval_frames = s.num_train_frames, s.num_eval_frames
  results_csv_path = s.results_csv_path or None
  checkpoint_dir = s.checkpoint_dir or None
  rows: List[Dict[str, Any]] = []
  start_iteration = 0
  saved_until = 0
  streams = train_streams_lib.TrainStreams(
      lambda iteration: make_environment(iteration, 'train'))
  if resume_from is not None:
    start_iteration, rows, saved_until = _restore(resume_from, agent, replay)
    streams.set_state(checkpoint.load_meta(resume_from)[
        train_streams_lib.META_KEY])
    rows = rows[:start_iteration]
    logging.info('Resumed from %s at iteration %d.', resume_from,
                 start_iteration)
    if results_csv_path:
      results_csv.write_rows(results_csv_path, rows)

  try:
    for hook in hooks:
      hook.begin_run(start_iteration, agent, rows)
    for iteration in range(start_iteration, num_iterations + 1):
      for hook in hooks:
        hook.begin_iteration(iteration)
      train_stats = None
      if iteration > 0:
        agent.reset_statistics()
        train_stats = _hooked_phase(
            hooks, iteration, 'train', lambda on_step: streams.run_phase(
                iteration, agent.step, num_train_frames, num_action_repeats,
                on_step))
      eval_stats = _hooked_phase(
          hooks, iteration, 'eval', lambda on_step: _evaluate(
              make_environment(iteration, 'eval'), agent.eval_step,
              num_eval_frames, num_action_repeats, on_step))

      row = results_csv.make_row(
          agent=s.agent, environment_name=environment_name, seed=s.seed,
          iteration=iteration, frame=iteration * num_train_frames,
          eval_stats=eval_stats, train_stats=train_stats,
          train_exploration_epsilon=agent.exploration_epsilon,
          train_state_value=agent.statistics['state_value'],
          normalized_return=normalize(eval_stats.episode_return))
      rows.append(row)
      if results_csv_path:
        results_csv.write_rows(results_csv_path, rows)
      if checkpoint_dir:
        saved_until = _save(s, iteration, rows, agent, replay, saved_until,
                            streams)
      for hook in hooks:
        hook.end_iteration(iteration, row)
  finally:
    streams.close()
    for hook in hooks:
      hook.end_run()
  return rows
