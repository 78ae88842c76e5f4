"""The iteration loop shared by every agent: phases, CSV rows, checkpoints.

Iteration 0 evaluates only; each later iteration trains `num_train_frames`
then evaluates `num_eval_frames`, each phase on a fresh environment seeded
from (seed, iteration, phase), so that a resumed run sees the environments an
uninterrupted one would. After each iteration the CSV is rewritten atomically
and a checkpoint is saved; a rerun with the same checkpoint directory resumes.
"""

import math
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional

from absl import logging
import numpy as np

from zoo import checkpoint
from zoo import environment
from zoo import results_csv

PHASES = ('train', 'eval')
_REPLAY_SCALARS = ('num_added', 'episode_step', 'rng_state')


class PhaseStats(NamedTuple):
  episode_return: float  # Mean over complete episodes (see run_phase).
  num_episodes: int      # Complete episodes.
  num_frames: int        # Frames counted in the phase (all streams).
  frame_rate: float      # num_frames / duration.
  duration: float        # Seconds.


def environment_seed(seed: int, iteration: int, phase: str) -> int:
  """Return the seed of the environment of one phase of one iteration."""
  state = np.random.SeedSequence([seed, iteration, PHASES.index(phase)])
  return int(state.generate_state(1)[0] % (2**31 - 1))


def run_phase(env: environment.BatchedEnvironment,
              act: Callable[[environment.BatchedTimeStep], np.ndarray],
              num_frames: int, num_action_repeats: int, *,
              whole_episodes: bool = False,
              on_step: Optional[Callable[[int], None]] = None) -> PhaseStats:
  """Run `act` on every stream for a phase of `num_frames` frames.

  Every timestep a stream spends in a counted episode counts
  `num_action_repeats` frames (its FIRST one too, as DQN Zoo counts), summed
  over the streams. Returns are of raw (unclipped) rewards. Two rules:

  - Budget (`whole_episodes=False`; training, and evaluation with K = 1, which
    is DQN Zoo's rule exactly): every stream steps until `num_frames` frames
    are spent. The episode return is the mean over the episodes that
    completed; if none did, the running (partial) return averaged over the
    streams. With K streams each gets num_frames / K frames, so at K > 1 the
    completed episodes are biased towards short ones and episodes are cut.
  - Whole episodes (`whole_episodes=True`; evaluation with K > 1): a stream
    starts a new episode only while fewer than `num_frames` frames are spent
    (summed over the streams), and every episode started runs to its end
    (the environment's frame cap ends it). The return is the mean over these
    complete episodes, never a partial one, and every stream completes at
    least one (all start at frame 0), so num_episodes >= K. Whether an
    episode starts depends only on the past, so by Wald's identity
    E[sum of returns] = E[episodes] x E[return]: the mean is a ratio
    estimator of E[return], with a bias of order 1 / episodes
    (tests/test_zoo_run_loop.py measures it). Frames of streams waiting for
    the others are not counted; the phase counts at most
    num_frames + K x (longest episode) frames.

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
  num_streams = env.num_envs
  running = np.zeros(num_streams, np.float64)
  counted = np.zeros(num_streams, bool)  # In an episode that counts.
  completed: List[float] = []
  frames = 0
  start = time.perf_counter()
  timestep = env.reset()
  while True:
    first = timestep.step_type == environment.FIRST
    counted = np.where(first, frames < num_frames, counted)
    actions = act(timestep)
    frames += num_action_repeats * int(counted.sum())
    running = np.where(first, 0.0, running + timestep.reward)
    last = timestep.step_type == environment.LAST
    if (last & counted).any():
      completed.extend(running[last & counted].tolist())
    counted &= ~last
    if on_step is not None:
      on_step(frames)
    if frames >= num_frames and not (whole_episodes and counted.any()):
      break
    timestep = env.step(actions)
  duration = time.perf_counter() - start
  if completed:
    episode_return = float(np.mean(completed))
  else:  # Only under the budget rule.
    episode_return = float(np.mean(running))
  return PhaseStats(episode_return, len(completed), frames,
                    frames / duration if frames else float('nan'), duration)


def config_differences(saved: Dict[str, Any],
                       current: Dict[str, Any]) -> List[str]:
  """Return '--name: saved vs current' for every differing setting."""
  out = []
  for name in sorted(set(saved) | set(current)):
    if saved.get(name) != current.get(name):
      out.append(f'--{name}={saved.get(name)!r} in the checkpoint, '
                 f'{current.get(name)!r} now')
  return out


def check_checkpoint_config(checkpoint_dir: Optional[str],
                            config: Dict[str, Any]) -> Optional[str]:
  """Return the checkpoint to resume, or raise if it has another config."""
  path = checkpoint.latest(checkpoint_dir) if checkpoint_dir else None
  if path is None:
    return None
  saved = checkpoint.load_meta(path)['config']
  differences = config_differences(saved, config)
  if differences:
    raise ValueError(
        f'The checkpoint {path} was written by another agent or '
        'configuration: ' + '; '.join(differences) + '. Rerun with the same '
        'flags to resume, or use a new --checkpoint_dir.')
  return path


def _save(checkpoint_dir, iteration, config, rows, agent, replay):
  replay_state = replay.get_state()
  meta = {
      'iteration': iteration + 1,  # Next iteration to run.
      'config': config,
      'rows': rows,
      'replay': {name: _jsonable(replay_state[name])
                 for name in _REPLAY_SCALARS},
  }
  arrays = {name: value for name, value in replay_state.items()
            if name not in _REPLAY_SCALARS}
  checkpoint.save(checkpoint_dir, iteration, meta, agent.get_state(), arrays)


def _jsonable(value):
  return value.tolist() if isinstance(value, np.ndarray) else value


def _restore(path, agent, replay):
  meta, tree, arrays = checkpoint.load(path, agent.get_state())
  agent.set_state(tree)
  replay.set_state(dict(arrays, **meta['replay']))
  return meta['iteration'], meta['rows']


def _run_fresh_phase(make_environment, iteration: int, phase: str, step_fn,
                     num_frames: int, num_action_repeats: int):
  """Run a phase on a fresh environment of (iteration, phase); close it.

  Evaluation with K > 1 streams counts whole episodes (run_phase).
  """
  env = make_environment(iteration, phase)
  try:
    return run_phase(env, step_fn, num_frames, num_action_repeats,
                     whole_episodes=phase == 'eval' and env.num_envs > 1)
  finally:
    env.close()


def run_experiment(
    *,
    agent,
    replay,
    make_environment: Callable[[int, str], environment.BatchedEnvironment],
    num_iterations: int,
    num_train_frames: int,
    num_eval_frames: int,
    num_action_repeats: int,
    agent_name: str,
    environment_name: str,
    seed: int,
    normalize: Callable[[float], float],
    config: Dict[str, Any],
    results_csv_path: Optional[str] = None,
    checkpoint_dir: Optional[str] = None,
) -> List[Dict[str, Any]]:
  """Run (or resume) iterations 0..num_iterations; return the CSV rows.

  Args:
    agent: a zoo.agent.QuantileAgent (step, eval_step, statistics, state).
    replay: the agent's replay (checkpointed with it).
    make_environment: fn(iteration, phase) -> fresh BatchedEnvironment.
    num_iterations: training iterations after the eval-only iteration 0.
    num_train_frames: frames per training phase.
    num_eval_frames: frames per evaluation phase.
    num_action_repeats: frames per agent step.
    agent_name: the CSV's agent column.
    environment_name: the CSV's environment_name column.
    seed: the CSV's seed column.
    normalize: eval return -> human-normalised score.
    config: settings stored in checkpoints; a resume needs equal ones.
    results_csv_path: where the CSV goes (None: not written).
    checkpoint_dir: where checkpoints go (None: none).
  """
  rows: List[Dict[str, Any]] = []
  start_iteration = 0
  path = check_checkpoint_config(checkpoint_dir, config)
  if path is not None:
    start_iteration, rows = _restore(path, agent, replay)
    rows = rows[:start_iteration]
    logging.info('Resumed from %s at iteration %d.', path, start_iteration)
    if results_csv_path:
      results_csv.write_rows(results_csv_path, rows)

  durations = []
  for iteration in range(start_iteration, num_iterations + 1):
    began = time.perf_counter()
    train_stats = None
    if iteration > 0:
      agent.reset_statistics()
      train_stats = _run_fresh_phase(make_environment, iteration, 'train',
                                     agent.step, num_train_frames,
                                     num_action_repeats)
    eval_stats = _run_fresh_phase(make_environment, iteration, 'eval',
                                  agent.eval_step, num_eval_frames,
                                  num_action_repeats)

    normalized = normalize(eval_stats.episode_return)
    row = results_csv.make_row(
        agent=agent_name, environment_name=environment_name, seed=seed,
        iteration=iteration, frame=iteration * num_train_frames,
        eval_stats=eval_stats, train_stats=train_stats,
        train_exploration_epsilon=agent.exploration_epsilon,
        train_state_value=agent.statistics['state_value'],
        normalized_return=normalized)
    rows.append(row)
    if results_csv_path:
      results_csv.write_rows(results_csv_path, rows)
    if checkpoint_dir:
      _save(checkpoint_dir, iteration, config, rows, agent, replay)

    durations.append(time.perf_counter() - began)
    eta = np.mean(durations[-3:]) * (num_iterations - iteration)
    train_rate = train_stats.frame_rate if train_stats else math.nan
    logging.info(
        'iteration %d/%d, frame %d: eval return %.2f (%d episodes), train '
        'return %.2f, human-normalised %.3f, epsilon %.3f, train %.0f '
        'frames/s, eval %.0f frames/s, updates %d, ETA %s',
        iteration, num_iterations, row['frame'], eval_stats.episode_return,
        eval_stats.num_episodes, row['train_episode_return'], normalized,
        agent.exploration_epsilon, train_rate, eval_stats.frame_rate,
        agent.num_updates, _format_duration(eta))
  return rows


def _format_duration(seconds: float) -> str:
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  return f'{hours}h{rest // 60:02d}m{rest % 60:02d}s'
