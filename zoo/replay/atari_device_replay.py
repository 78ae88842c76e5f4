"""An Atari replay that lives on the device: pure functions for jitted loops.

K streams of C slots each, zoo.replay.device_replay's circular `DeviceArrays`
with no host copy: each slot holds one uint8 frame [84, 84] (the step's newest,
not its stack), the step's clipped reward, environment discount, episode step
and the action taken on it. The 4-frame stacks of s_tm1 and s_t are gathered at
sampling by zoo.replay.device_replay's sampler and gather, which follow
zoo.replay.frame_replay's rules (stack_indices, is_valid_transition, DQN Zoo's
end-padding at episode starts): the same transitions and stacks as the host
FrameReplay for the same (stream, logical index), drawn uniformly over the
valid ones. Signatures as zoo.replay.packed_replay's (the MinAtar loop's).

Memory (`nbytes`): 84 * 84 + 16 bytes a slot, so DQN Zoo's 1M transitions
take 7.07 GB, held once. On a GPU they fit beside the networks (80 GB cards).
On the CPU the same 7.07 GB are in RAM from `empty` on (XLA allocates and
zeroes the arrays at once), against FrameReplay's pages touched as it fills;
`store` writes in place only where XLA may reuse the buffer (inside a
`lax.scan` carry, or a jitted call that donates the replay), else each call
copies the whole replay.
"""

from typing import Optional, Tuple

import chex
import jax
import jax.numpy as jnp

from zoo.environments import environment
from zoo.replay import device_replay

FRAME_SHAPE: Tuple[int, int] = (84, 84)
NUM_STACKED = 4


def nbytes(num_streams: int, stream_capacity: int,
           frame_shape=FRAME_SHAPE) -> int:
  """Return the bytes of the replay's arrays (what `empty` allocates)."""
  frame_bytes = 1
  for size in frame_shape:
    frame_bytes *= int(size)
  slots = num_streams * stream_capacity
  return slots * (frame_bytes + 4 * 4) + num_streams * 4


def empty(num_streams: int, stream_capacity: int, frame_shape=FRAME_SHAPE,
          num_stacked: int = NUM_STACKED) -> device_replay.DeviceArrays:
  """Return an empty replay of K streams of `stream_capacity` slots each.

  Raises:
    ValueError: if a stream cannot hold one transition's stacks.
  """
  if num_streams < 1:
    raise ValueError(f'num_streams must be >= 1, got {num_streams}.')
  if stream_capacity < num_stacked + 1:
    raise ValueError(
        f'A replay of {stream_capacity} slots per stream cannot hold a '
        f'transition of {num_stacked}-frame stacks; give each stream at least '
        f'{num_stacked + 1} (raise the capacity or lower num_envs).')
  shape = (num_streams, stream_capacity)
  return device_replay.DeviceArrays(
      frames=jnp.zeros(shape + tuple(frame_shape), jnp.uint8),
      actions=jnp.zeros(shape, jnp.int32),
      rewards=jnp.zeros(shape, jnp.float32),
      discounts=jnp.zeros(shape, jnp.float32),
      episode_steps=jnp.zeros(shape, jnp.int32),
      num_added=jnp.zeros(num_streams, jnp.int32))


def newest_frame(observation: jax.Array, episode_step: jax.Array) -> jax.Array:
  """Return the newest frame [K, H, W] of DQN Zoo stacks [K, H, W, S]."""
  # zoo.environments.environment.newest_frame_index, in JAX.
  index = jnp.minimum(episode_step, observation.shape[-1] - 1)
  return jnp.take_along_axis(observation, index[:, None, None, None],
                             axis=-1)[..., 0]


def store(replay: device_replay.DeviceArrays, episode_step: jax.Array,
          timestep, actions: jax.Array, max_abs_reward: float,
          frame: Optional[jax.Array] = None):
  """Add one step of the K streams (zoo.replay.frame_replay.FrameReplay.add's rules).

  Args:
    replay: the arrays.
    episode_step: [K] int32, each stream's episode step before this one.
    timestep: fields [K, ...] (step_type, reward, discount, observation
      [K, H, W, S] uint8 in DQN Zoo's layout).
    actions: [K] int32, the actions chosen on it.
    max_abs_reward: rewards are clipped to ± this.
    frame: [K, H, W] uint8, the step's newest frame when the environment gives
      it (zoo.environments.atari_jax_env's TimeStep.frame); None: taken from
      the stacks.

  Returns:
    (replay, episode_step).
  """
  num_streams, capacity = replay.actions.shape
  chex.assert_shape(actions, (num_streams,))
  chex.assert_shape(timestep.observation,
                    (num_streams,) + replay.frames.shape[2:] + (None,))
  first = timestep.step_type == environment.FIRST
  episode_step = jnp.where(first, 0, episode_step + 1)
  if frame is None:
    frame = newest_frame(timestep.observation, episode_step)
  chex.assert_shape(frame, (num_streams,) + replay.frames.shape[2:])
  slot = replay.num_added % capacity
  streams = jnp.arange(num_streams)
  reward = jnp.clip(timestep.reward, -max_abs_reward, max_abs_reward)
  replay = device_replay.DeviceArrays(
      frames=replay.frames.at[streams, slot].set(frame.astype(jnp.uint8)),
      actions=replay.actions.at[streams, slot].set(actions),
      rewards=replay.rewards.at[streams, slot].set(reward),
      discounts=replay.discounts.at[streams, slot].set(timestep.discount),
      episode_steps=replay.episode_steps.at[streams, slot].set(episode_step),
      num_added=replay.num_added + 1)
  return replay, episode_step


def sample(replay: device_replay.DeviceArrays, rng_key, batch_size: int,
           num_stacked: int = NUM_STACKED, stacks_last: bool = True):
  """Return (rng_key, Transitions [B]) drawn uniformly over valid transitions.

  The replay must hold a valid transition (a step past an episode's FIRST):
  under jit nothing can check it, and the batch would be garbage.

  Args:
    replay: the arrays.
    rng_key: a PRNG key, returned split.
    batch_size: B.
    num_stacked: S, frames per stack.
    stacks_last: True: s_tm1 and s_t are [B, H, W, S] as the environment
      emits them; False: [B, S, H, W].
  """
  rng_key, stream, logical = device_replay.sample_indices(
      replay, rng_key, batch_size, num_stacked)
  transitions = gather(replay, stream, logical, num_stacked, stacks_last)
  return rng_key, transitions


def gather(replay: device_replay.DeviceArrays, stream, logical,
           num_stacked: int = NUM_STACKED, stacks_last: bool = True):
  """Return the transitions at (stream, logical index) [B] (FrameReplay.gather)."""
  transitions = device_replay.gather(replay, stream, logical, num_stacked)
  if stacks_last:
    transitions = transitions._replace(
        s_tm1=jnp.moveaxis(transitions.s_tm1, 1, -1),
        s_t=jnp.moveaxis(transitions.s_t, 1, -1))
  return transitions
