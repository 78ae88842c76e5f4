"""The training environment of a run: K streams that go on across phases.

One rule per K (docs/training-streams.md):

- K = 1 (DQN Zoo, exactly): every training phase runs on a fresh environment
  of (seed, iteration, 'train'); the episode running when the phase's frames
  are spent is cut. The phase's return is the mean over the episodes that
  completed in it, else the cut episode's partial return.
- K > 1: the environment is made once, at the first training phase, and its
  streams go on across phases: an episode running when a phase ends goes on
  in the next training phase (evaluation has its own environments). The
  training steps of all phases form one unbroken sequence per stream, as if
  the evaluations between them did not happen. A phase's return is the mean
  over the episodes that ended in it, wherever they started; NaN if none
  ended (never a partial return).

Resume with K > 1 restarts the streams: the emulators' states are not in the
checkpoint (ale_py's AtariVectorEnv exposes no per-emulator state to save or
restore), so the resumed run makes a fresh environment of (seed, resumed
iteration, 'train'), as a K = 1 phase would, and the K episodes running at
the checkpoint are cut there. Everything else (agent, replay, rows) resumes
exactly. `get_state()` records what was running (JSON-able, for the
checkpoint's meta under META_KEY).
"""

import time
from typing import Any, Callable, Dict, NamedTuple, Optional

from absl import logging
import numpy as np

from zoo import environment

# The key of get_state() in a checkpoint's meta.
META_KEY = 'train_streams'


class PhaseResult(NamedTuple):
  episode_return: float  # Mean over the episodes that ended in the phase.
  num_episodes: int      # Episodes that ended in the phase.
  num_frames: int        # Frames counted (all streams).
  duration: float        # Seconds, stepping and acting.


class TrainStreams:
  """The training environment of one run, kept across phases when K > 1."""

  def __init__(self,
               make_environment: Callable[[int],
                                          environment.BatchedEnvironment]):
    """Create the streams (the environment is made at the first phase).

    Args:
      make_environment: fn(iteration) -> the fresh training environment of
        that iteration (seeded from the run's seed and the iteration).
    """
    self._make_environment = make_environment
    self._env = None
    self._made_at_iteration = None
    self._actions = None        # [K] chosen for the last timestep, not run.
    self._returns = None        # [K] raw return of each running episode.
    self._episode_steps = None  # [K] agent steps since each stream's FIRST.

  @property
  def env(self) -> Optional[environment.BatchedEnvironment]:
    """Return the environment kept for the next phase (None: a fresh one)."""
    return self._env

  def run_phase(self, iteration: int,
                act: Callable[[environment.BatchedTimeStep], np.ndarray],
                num_frames: int, num_action_repeats: int,
                on_step: Optional[Callable[[int], None]] = None
                ) -> PhaseResult:
    """Train on every stream until `num_frames` frames are spent.

    Every timestep of every stream counts `num_action_repeats` frames (as
    zoo.run_loop.run_phase's budget rule); returns are of raw rewards.

    Args:
      iteration: the iteration (seeds the environment when one is made).
      act: fn(timestep) -> [K] actions (the agent's step).
      num_frames: the phase's frame budget (positive).
      num_action_repeats: frames per agent step.
      on_step: called after every step with the frames counted so far; it
        may raise to abandon the phase (the streams are then closed, and a
        later phase starts fresh ones).

    Raises:
      ValueError: if num_frames is not positive.
    """
    if num_frames <= 0:
      raise ValueError(
          f'A phase needs a positive frame budget, got {num_frames}.')
    try:
      if self._env is None:
        self._env = self._make_environment(iteration)
        self._made_at_iteration = iteration
        # Timed from here, as zoo.run_loop.run_phase (environment made).
        start = time.perf_counter()
        timestep = self._env.reset()
        k = self._env.num_envs
        returns, steps = np.zeros(k, np.float64), np.zeros(k, np.int64)
      else:  # The actions chosen at the end of the previous phase run now.
        start = time.perf_counter()
        timestep = self._env.step(self._actions)
        returns, steps = self._returns, self._episode_steps
      num_streams = self._env.num_envs
      ended = []
      frames = 0
      while True:
        first = timestep.step_type == environment.FIRST
        actions = act(timestep)
        frames += num_action_repeats * num_streams
        returns = np.where(first, 0.0, returns + timestep.reward)
        steps = np.where(first, 0, steps + 1)
        last = timestep.step_type == environment.LAST
        if last.any():
          ended.extend(returns[last].tolist())
        if on_step is not None:
          on_step(frames)
        if frames >= num_frames:
          break
        timestep = self._env.step(actions)
    except BaseException:
      self.close()
      raise
    duration = time.perf_counter() - start
    if ended:
      episode_return = float(np.mean(ended))
    elif num_streams == 1:  # DQN Zoo: the cut episode's partial return.
      episode_return = float(returns[0])
    else:
      episode_return = float('nan')
    if num_streams == 1:  # DQN Zoo: the next phase has a fresh environment.
      self.close()
    else:
      self._actions, self._returns, self._episode_steps = (actions, returns,
                                                           steps)
    return PhaseResult(episode_return, len(ended), frames, duration)

  def get_state(self) -> Optional[Dict[str, Any]]:
    """Return what the streams are running (JSON-able), or None if none.

    With K = 1 (a fresh environment per phase) and before the first training
    phase, there is nothing running: None.
    """
    if self._env is None:
      return None
    return {
        'num_envs': int(self._env.num_envs),
        'made_at_iteration': int(self._made_at_iteration),
        'episode_steps': [int(s) for s in self._episode_steps],
        'episode_returns': [float(r) for r in self._returns],
    }

  def set_state(self, state: Optional[Dict[str, Any]]) -> None:
    """Resume: the next phase starts fresh streams; log the episodes cut.

    Args:
      state: a checkpoint's get_state() (None: nothing was running).
    """
    self.close()
    if state:
      logging.info(
          'Resuming with fresh training streams: the %d episodes running at '
          'the checkpoint (at agent steps %s) are cut.', state['num_envs'],
          state['episode_steps'])

  def close(self) -> None:
    """Close the environment; the next phase makes a fresh one."""
    if self._env is not None:
      env, self._env = self._env, None
      self._actions = self._returns = self._episode_steps = None
      env.close()
