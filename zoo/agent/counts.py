"""A run's counts and constants, in frames: the one record both loops read.

zoo.loops.build.counts makes it from the settings. A block (the jitted
loop's unit of compiled work) is the steps between two learning points.
"""

from typing import NamedTuple

import jax.numpy as jnp

from zoo.agent import learning


class Counts(NamedTuple):
  """The counts (in frames) and constants of a run."""
  num_streams: int             # K environment streams.
  observation_shape: tuple     # One state as the network takes it.
  replay_capacity: int         # Transitions, all streams.
  batch_size: int
  min_replay_size: int         # Transitions (all streams) before learning.
  learn_period: int            # Frames per update.
  target_period: int           # Frames between target copies.
  num_action_repeats: int      # Frames per agent step.
  additional_discount: float   # γ, on the environment's discounts.
  max_abs_reward: float
  grad_scale: float            # 2/N with scale_grad, else 1.
  epsilon: learning.LinearSchedule  # Training ε by frame.
  eval_epsilon: float
  num_train_frames: int
  num_eval_frames: int
  num_fused_updates: int = 1   # The Python loop's updates per dispatch.
  overlap_learning: bool = False  # The Python loop acts on a snapshot.

  @property
  def stream_capacity(self) -> int:
    """Return the replay's slots per stream."""
    return self.replay_capacity // self.num_streams

  @property
  def step_frames(self) -> int:
    """Return the frames of one step of the K streams."""
    return self.num_streams * self.num_action_repeats

  @property
  def steps_per_block(self) -> int:
    return max(self.learn_period // self.step_frames, 1)

  @property
  def block_frames(self) -> int:
    return self.steps_per_block * self.step_frames

  @property
  def updates_per_block(self) -> int:
    return self.block_frames // self.learn_period

  def held(self, frame_t):
    """Return the transitions the replay holds at frame `frame_t`."""
    steps = frame_t // self.step_frames
    if isinstance(steps, int):
      return self.num_streams * min(steps, self.stream_capacity)
    return self.num_streams * jnp.minimum(steps, self.stream_capacity)

  def updates_done(self, frame_t: int) -> int:
    """Return the updates run by frame `frame_t` (a block boundary)."""
    k = self.num_streams
    if k * self.stream_capacity < self.min_replay_size:
      return 0
    # The first frame at which the replay holds its minimum.
    first_end = self.step_frames * -(-self.min_replay_size // k)
    first_block = -(-first_end // self.block_frames)  # Blocks up to then.
    return self.updates_per_block * max(
        frame_t // self.block_frames - first_block + 1, 0)
