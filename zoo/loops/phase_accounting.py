"""One phase's accounting of K streams, numpy or jax.numpy (`xp`), both loops.

Each timestep a stream spends in a counted episode counts `num_action_repeats`
frames. A phase starts with every stream's episode counted (one carried over
too); a later episode counts if it starts before the frames are spent. The
phase ends once they are (budget: training, and evaluation at K = 1, DQN Zoo)
and, for whole episodes (evaluation at K > 1), every counted episode ended.
Its return: the mean over the counted episodes that ended; if none did, the
partial return at K = 1 (DQN Zoo), NaN at K > 1 (docs/training-streams.md).
"""

import math
from typing import Any, Callable, NamedTuple, Optional, Tuple

import chex
import numpy as np

from zoo.environments import environment


class PhaseStats(NamedTuple):
  """One phase's CSV numbers (both loops)."""
  episode_return: float  # The phase's return (phase_stats' rule).
  num_episodes: int      # Counted episodes that ended in the phase.
  num_frames: int        # Frames counted in the phase (all streams).
  frame_rate: float      # num_frames / duration.
  duration: float        # Seconds.


class Tally(NamedTuple):
  """A phase's totals so far (numpy or jax arrays)."""
  running: Any       # [K] float: return of each stream's current episode.
  counted: Any       # [K] bool: the current episode counts.
  frames: Any        # int scalar: frames counted.
  return_sum: Any    # float scalar: of the counted episodes that ended.
  num_episodes: Any  # int scalar: counted episodes that ended.


def start(running, xp=np) -> Tally:
  """Return a phase's zero totals; `running`: the streams' returns so far."""
  return Tally(running, xp.ones(running.shape, bool), xp.zeros((), int),
               xp.zeros((), running.dtype), xp.zeros((), int))


def count(tally: Tally, step_type, reward, num_frames: int,
          num_action_repeats: int, xp=np) -> Tally:
  """Count one timestep ([K] step types and raw rewards) of a phase."""
  chex.assert_equal_shape([step_type, reward, tally.running, tally.counted])
  first = step_type == environment.FIRST
  last = step_type == environment.LAST
  counted = xp.where(first, tally.frames < num_frames, tally.counted)
  running = xp.where(first, 0.0, tally.running + reward).astype(
      tally.running.dtype)
  ended = last & counted
  return Tally(
      running, counted & ~last,
      tally.frames + num_action_repeats * xp.sum(counted,
                                                 dtype=tally.frames.dtype),
      tally.return_sum + xp.sum(xp.where(ended, running, 0.0),
                                dtype=running.dtype),
      tally.num_episodes + xp.sum(ended, dtype=tally.num_episodes.dtype))


def is_over(tally: Tally, num_frames: int, whole_episodes: bool, xp=np):
  """Return whether the phase ends after the timestep counted last."""
  spent = tally.frames >= num_frames
  return spent & ~xp.any(tally.counted) if whole_episodes else spent


def phase_stats(tally: Tally, duration: float) -> PhaseStats:
  """Return the PhaseStats of one phase's (host) totals."""
  num_episodes = int(tally.num_episodes)
  running = np.asarray(tally.running, np.float64)
  if num_episodes:
    episode_return = float(tally.return_sum) / num_episodes
  elif running.size == 1:  # DQN Zoo: the cut episode's partial return.
    episode_return = float(running[0])
  else:
    episode_return = math.nan
  frames = int(tally.frames)
  return PhaseStats(episode_return, num_episodes, frames,
                    frames / duration if duration else math.nan, duration)


def run_steps(timestep: environment.BatchedTimeStep,
              step: Callable[[np.ndarray], environment.BatchedTimeStep],
              act: Callable[[environment.BatchedTimeStep], np.ndarray],
              tally: Tally, num_frames: int, num_action_repeats: int,
              whole_episodes: bool,
              on_step: Optional[Callable[[int], None]] = None
              ) -> Tuple[np.ndarray, Tally]:
  """Act and count until the phase is over; return (last actions, tally)."""
  while True:
    actions = act(timestep)
    tally = count(tally, timestep.step_type, timestep.reward, num_frames,
                  num_action_repeats)
    if on_step is not None:
      on_step(int(tally.frames))
    if is_over(tally, num_frames, whole_episodes):
      return actions, tally
    timestep = step(actions)

