"""The batched environment contract: K >= 1 dm_env streams.

The step after a stream's LAST starts a new episode (FIRST, action ignored).
Stacks are zero-padded at the END as DQN Zoo's: [A, 0, 0, 0], ..., [B, C, D, E].
"""

import abc
from typing import NamedTuple, Sequence

import dm_env
import numpy as np

FIRST, MID, LAST = (np.int8(t) for t in dm_env.StepType)


class BatchedTimeStep(NamedTuple):
  step_type: np.ndarray    # [K] int8, dm_env.StepType values.
  reward: np.ndarray       # [K] float32, raw (unclipped) sum over repeats.
  discount: np.ndarray     # [K] float32, 0 at game over and on life loss.
  observation: np.ndarray  # [K, 84, 84, 4] uint8, DQN Zoo stack layout.


class BatchedEnvironment(abc.ABC):
  """K environment streams with dm_env auto-reset semantics per stream."""

  num_envs: int
  num_actions: int

  @abc.abstractmethod
  def reset(self) -> BatchedTimeStep:
    """Start a new episode in every stream; all step types are FIRST."""

  @abc.abstractmethod
  def step(self, actions: np.ndarray) -> BatchedTimeStep:
    """Step every stream with its action ([K] ints in [0, num_actions))."""

  def close(self) -> None:
    """Release the emulators."""

  def __enter__(self):
    return self

  def __exit__(self, *unused_exc):
    self.close()


def newest_frame_index(episode_step: np.ndarray,
                       num_stacked_frames: int = 4) -> np.ndarray:
  """Return where the newest frame sits in the stack at each episode step."""
  return np.minimum(np.asarray(episode_step), num_stacked_frames - 1)


def stack_frames(frames: Sequence[np.ndarray],
                 num_stacked_frames: int = 4) -> np.ndarray:
  """Stack the last [H, W] frames, oldest first, as [H, W, S] end-padded."""
  if not frames:
    raise ValueError('stack_frames needs at least one frame.')
  frames = list(frames[-num_stacked_frames:])
  zero = np.zeros_like(frames[0])
  frames += [zero] * (num_stacked_frames - len(frames))
  return np.stack(frames, axis=-1)


def check_actions(actions, num_envs: int, num_actions: int) -> np.ndarray:
  """Return actions as an int array [K], or raise a ValueError naming why."""
  actions = np.asarray(actions)
  if actions.shape != (num_envs,):
    raise ValueError(f'Expected actions of shape ({num_envs},), one per '
                     f'stream, got shape {actions.shape}.')
  if not np.issubdtype(actions.dtype, np.integer):
    raise ValueError(f'Actions must be integers, got dtype {actions.dtype}.')
  if actions.size and (actions.min() < 0 or actions.max() >= num_actions):
    raise ValueError(f'Actions must lie in [0, {num_actions}) (the minimal '
                     f'action set), got {actions.tolist()}.')
  return actions


def stream_seeds(seed: int, num_envs: int) -> np.ndarray:
  """Return one seed per stream; stream 0 gets `seed` itself (K=1 = DQN Zoo)."""
  if not 0 <= seed < 2**31 - 1:
    raise ValueError(f'Seeds must lie in [0, 2**31 - 1) (emulators take an '
                     f'int32), got {seed}.')
  extra = np.random.SeedSequence([seed, num_envs]).generate_state(
      max(num_envs - 1, 0)) % (2**31 - 1)
  return np.concatenate([[seed], extra]).astype(np.int64)
