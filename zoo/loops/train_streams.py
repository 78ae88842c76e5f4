"""The training environment of a run: K streams that go on across phases.

K = 1 (DQN Zoo): a fresh environment of (seed, iteration, 'train') per
phase. K > 1: its streams go on across phases; a resume restarts them
(docs/training-streams.md). `get_state()` records what was running.
"""

import time
from typing import Any, Callable, Dict, Optional

from absl import logging
import numpy as np

from zoo.environments import environment
from zoo.loops import phase_accounting

# The key of get_state() in a checkpoint's meta.
META_KEY = 'train_streams'


class TrainStreams:
  """The training environment of one run, kept across phases when K > 1."""

  def __init__(self,
               make_environment: Callable[[int],
                                          environment.BatchedEnvironment]):
    """Create the streams; `make_environment(iteration)` makes a fresh one."""
    self._make_environment = make_environment
    self._env = None
    self._made_at_iteration = None
    self._actions = None        # [K] chosen for the last timestep, not run.
    self._returns = None        # [K] raw return of each running episode.
    self._episode_steps = None  # [K] agent steps since each stream's FIRST.

  def run_phase(self, iteration: int,
                act: Callable[[environment.BatchedTimeStep], np.ndarray],
                num_frames: int, num_action_repeats: int,
                on_step: Optional[Callable[[int], None]] = None
                ) -> phase_accounting.PhaseStats:
    """Train on every stream until `num_frames` frames are spent (budget rule).

    Args:
      iteration: seeds the environment when one is made.
      on_step: called with the frames counted after every step; it may raise
        to abandon the phase (the streams are then closed).

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
        # Timed from here, as zoo.loops.python_loop.run_phase.
        start = time.perf_counter()
        timestep = self._env.reset()
        self._returns = np.zeros(self._env.num_envs, np.float64)
        self._episode_steps = np.zeros(self._env.num_envs, np.int64)
      else:  # The actions chosen at the end of the previous phase run now.
        start = time.perf_counter()
        timestep = self._env.step(self._actions)

      def act_and_track(timestep):
        self._episode_steps = np.where(
            timestep.step_type == environment.FIRST, 0,
            self._episode_steps + 1)
        return act(timestep)

      self._actions, tally = phase_accounting.run_steps(
          timestep, self._env.step, act_and_track,
          phase_accounting.start(self._returns), num_frames,
          num_action_repeats, whole_episodes=False, on_step=on_step)
    except BaseException:
      self.close()
      raise
    stats = phase_accounting.phase_stats(tally,
                                         time.perf_counter() - start)
    self._returns = tally.running
    if phase_accounting.is_dqn_zoo(self._env.num_envs):  # Fresh every phase.
      self.close()
    return stats

  def get_state(self) -> Optional[Dict[str, Any]]:
    """Return what the streams are running (JSON-able), or None if none."""
    if self._env is None:
      return None
    return {
        'num_envs': int(self._env.num_envs),
        'made_at_iteration': int(self._made_at_iteration),
        'episode_steps': [int(s) for s in self._episode_steps],
        'episode_returns': [float(r) for r in self._returns],
    }

  def set_state(self, state: Optional[Dict[str, Any]]) -> None:
    """Resume from a get_state() (None: none): fresh streams; log those cut."""
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
