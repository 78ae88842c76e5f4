"""The one iteration driver: every loop's runs go through `run`.

Iteration 0 evaluates only; each later one trains, then evaluates. The driver
decides where a group of seeds starts and writes run.json, rows and CSVs,
checks interrupts and calls the hooks; a loop is an adapter (`Loop`).
"""

import abc
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from absl import logging

from zoo.configuration import settings as settings_lib
from zoo.loops import interrupts
from zoo.loops import phase_accounting
from zoo.loops import progress as progress_lib
from zoo.loops import resume
from zoo.loops import run_hooks
from zoo.loops import tensorboard_writer
from zoo.storage import results_csv
from zoo.storage import run_json

Rows = List[Dict[str, Any]]


class TrainResult(NamedTuple):
  """One seed's training phase, as the CSV row needs it."""
  stats: phase_accounting.PhaseStats
  exploration_epsilon: float  # ε at the phase's end.
  state_value: float          # Mean max-Q of the states acted on.


class Loop(abc.ABC):
  """A loop's adapter: the learners and environments of a group of seeds.

  `learners[i]` is what the hooks read of seed i: `frame_t`, `num_updates`
  and `last_loss` (None before the first update).
  """

  learners: Sequence[Any]

  @abc.abstractmethod
  def restore(self, paths: Sequence[str]) -> None:
    """Restore every seed from its checkpoint (zoo.loops.resume accepted)."""

  @abc.abstractmethod
  def train(self, iteration: int, on_step: Callable[[int], None]
            ) -> Sequence[TrainResult]:
    """Run every seed's training phase; call on_step(frames per seed)."""

  @abc.abstractmethod
  def evaluate(self, iteration: int, on_step: Callable[[int], None]
               ) -> Sequence[phase_accounting.PhaseStats]:
    """Run every seed's evaluation phase; call on_step(frames per seed)."""

  @abc.abstractmethod
  def save(self, iteration: int, rows: Sequence[Rows]) -> None:
    """Checkpoint every seed after `iteration` (its rows so far)."""

  def close(self) -> None:
    """Release the environments; called however the run ends."""


class Start(NamedTuple):
  """Where a group of seeds starts: iteration 0, or their checkpoints."""
  iteration: int                  # The next iteration to run.
  paths: Sequence[Optional[str]]  # Per seed: the checkpoint to restore.
  metas: Sequence[Optional[Dict[str, Any]]]
  rows: List[Rows]


def start_of(runs: Sequence[settings_lib.Settings]) -> Start:
  """Return where the seeds start (zoo.loops.resume.check_resume per seed).

  Raises ConfigError: a refused checkpoint, or seeds at different iterations.
  """
  found = [resume.check_resume(s) for s in runs]
  if all(f is None for f in found):
    return Start(0, [None] * len(runs), [None] * len(runs),
                 [[] for _ in runs])
  where = {s.seed: (f.meta['iteration'] if f else 0)
           for s, f in zip(runs, found)}
  if len(set(where.values())) > 1:
    raise settings_lib.ConfigError(
        'The seeds\' checkpoints stand at different iterations (next '
        f'iteration per seed: {where}); vmapped seeds resume together. Run '
        'the seeds that differ as their own --seeds group, or add --restart '
        'to start the group over (moves its files aside).')
  iteration = found[0].meta['iteration']
  return Start(iteration, [f.path for f in found], [f.meta for f in found],
               [list(f.meta['rows'][:iteration]) for f in found])


def default_hooks(s: settings_lib.Settings, label: str = '',
                  log: Callable[..., None] = logging.info
                  ) -> List[run_hooks.RunHooks]:
  """Return a seed's progress lines and, where asked, TensorBoard scalars."""
  hooks = [progress_lib.Progress(
      num_iterations=s.num_iterations, num_train_frames=s.num_train_frames,
      num_eval_frames=s.num_eval_frames,
      interval_seconds=s.progress_interval_seconds, label=label, log=log)]
  if s.tensorboard_dir:
    hooks.append(tensorboard_writer.TensorBoardWriter(
        s.tensorboard_dir, s.tensorboard_loss_period))
  return hooks


class _Interrupts:
  """Stop the run at a safe point once SIGINT or SIGTERM was recorded."""

  def __init__(self, runs: Sequence[settings_lib.Settings]):
    self._checkpointing = all(s.checkpoint_dir for s in runs)
    self.iteration = 0
    self.frame = 0
    self.resume_iteration = 0
    self.partial = False  # Work done in an iteration that is not saved yet.

  def check(self) -> None:
    signum = interrupts.pending()
    if signum is not None:
      raise resume.interrupted(
          signum, self.iteration, self.frame,
          self.resume_iteration if self._checkpointing else None,
          partial=self.partial)


def _each(hooks: Sequence[Sequence[run_hooks.RunHooks]], method: str,
          *args) -> None:
  for seed_hooks in hooks:
    for hook in seed_hooks:
      getattr(hook, method)(*args)


def run(runs: Sequence[settings_lib.Settings], make_loop: Callable[[], Loop],
        *, environment_name: str, normalize: Callable[[float], float],
        extra_hooks: Optional[Sequence[Sequence[run_hooks.RunHooks]]] = None,
        log: Callable[..., None] = logging.info) -> List[Rows]:
  """Run (or resume) iterations 0..num_iterations of a group; return rows.

  Args:
    runs: each seed's settings, resolved and checked, equal but for the seed
      and the paths; their directories held.
    make_loop: fn() -> the group's Loop, made once the start is known.
    environment_name: the CSV's column ('minatar-breakout').
    normalize: eval return -> the suite's normalised score.
    extra_hooks: per seed, hooks after the default ones.
    log: where the run's messages go.

  Raises:
    ConfigError: a refused checkpoint.
    interrupts.Interrupted: a recorded SIGINT/SIGTERM, at a safe point.
  """
  s = runs[0]
  start = start_of(runs)
  if start.iteration > s.num_iterations:
    return resume.finished(runs, start.rows,
                           lambda line: print(line, flush=True))
  stop = _Interrupts(runs)
  stop.iteration = stop.resume_iteration = start.iteration
  stop.frame = start.rows[0][-1]['frame'] if start.rows[0] else 0
  stop.check()
  for r in runs:
    if r.results_csv_path:
      run_json.write(r.results_csv_path, r.agent, r.suite, r.as_dict())
  loop = make_loop()
  try:
    stop.check()
    rows = [list(seed_rows) for seed_rows in start.rows]
    if start.iteration:
      loop.restore(start.paths)
      for path in start.paths:
        log('Resumed from %s at iteration %d.', path, start.iteration)
      for r, seed_rows in zip(runs, rows):
        if r.results_csv_path:
          results_csv.write_rows(r.results_csv_path, seed_rows)
    labels = ([''] if len(runs) == 1 else
              [f'seed {r.seed}: ' for r in runs])
    hooks = [default_hooks(r, label, log) + list(extra or ())
             for r, label, extra in zip(runs, labels,
                                        extra_hooks or [()] * len(runs))]
    return _iterate(loop, runs, rows, start.iteration, hooks, stop,
                    environment_name, normalize)
  finally:
    loop.close()


def _iterate(loop: Loop, runs, rows: List[Rows], first: int, hooks,
             stop: _Interrupts, environment_name: str, normalize) -> List[Rows]:
  """Run iterations first..num_iterations of every seed."""
  s = runs[0]

  def on_step(frames: int, status: str = '') -> None:
    _each(hooks, 'on_step', frames, status)
    stop.frame = loop.learners[0].frame_t
    stop.partial = True
    stop.check()

  def phase(iteration: int, name: str, run_phase):
    _each(hooks, 'begin_phase', iteration, name)
    results = run_phase(iteration, on_step)
    for seed_hooks, result in zip(hooks, results):
      for hook in seed_hooks:
        hook.end_phase(iteration, name, getattr(result, 'stats', result))
    return results

  try:
    for index, seed_hooks in enumerate(hooks):
      for hook in seed_hooks:
        hook.begin_run(first, loop.learners[index], rows[index])
    for iteration in range(first, s.num_iterations + 1):
      stop.iteration = iteration
      _each(hooks, 'begin_iteration', iteration)
      trained = (phase(iteration, 'train', loop.train) if iteration
                 else [None] * len(runs))
      evaluated = phase(iteration, 'eval', loop.evaluate)
      for r, seed_rows, train, stats in zip(runs, rows, trained, evaluated):
        seed_rows.append(results_csv.make_row(
            agent=r.agent, environment_name=environment_name, seed=r.seed,
            iteration=iteration, frame=iteration * s.num_train_frames,
            eval_stats=stats, train_stats=train.stats if train else None,
            train_exploration_epsilon=(train.exploration_epsilon if train
                                       else float('nan')),
            train_state_value=train.state_value if train else float('nan'),
            normalized_return=normalize(stats.episode_return)))
        if r.results_csv_path:
          results_csv.write_rows(r.results_csv_path, seed_rows)
      if all(r.checkpoint_dir for r in runs):
        loop.save(iteration, rows)
      stop.resume_iteration = iteration + 1
      stop.partial = False
      for seed_hooks, seed_rows in zip(hooks, rows):
        for hook in seed_hooks:
          hook.end_iteration(iteration, seed_rows[-1])
      stop.check()
  finally:
    _each(hooks, 'end_run')
  return rows
