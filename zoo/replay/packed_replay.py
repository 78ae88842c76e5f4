"""The jitted MinAtar loop's replay: zoo.replay.device_replay's layout, frames as bits.

One seed's replay is zoo.replay.device_replay's circular `DeviceArrays` (K streams
of C slots each, its sampler and gather: the host replay's rules) with each
binary 10x10xC frame bit-packed to ceil(100 C / 8) bytes. Pure functions, for
the jitted loop's scan (zoo.loops.jitted_train).
"""

import chex
import jax.numpy as jnp
import numpy as np

from zoo.environments import environment
from zoo.replay import device_replay



def packed_size(observation_shape) -> int:
  """Return the bytes of one packed observation."""
  return -(-int(np.prod(observation_shape)) // 8)


def pack(observation: jnp.ndarray) -> jnp.ndarray:
  """Return binary observations [..., 10, 10, C] packed to bits [..., P]."""
  flat = observation.reshape(observation.shape[:-3] + (-1,))
  return jnp.packbits(flat.astype(jnp.uint8), axis=-1)


def unpack(packed: jnp.ndarray, observation_shape) -> jnp.ndarray:
  """Return `pack`'s inverse: uint8 [..., *observation_shape]."""
  count = int(np.prod(observation_shape))
  bits = jnp.unpackbits(packed, axis=-1, count=count)
  return bits.reshape(packed.shape[:-1] + tuple(observation_shape))


def nbytes(num_streams: int, stream_capacity: int, observation_shape) -> int:
  """Return the bytes of one seed's replay arrays."""
  slots = num_streams * stream_capacity
  return slots * (packed_size(observation_shape) + 4 * 4) + num_streams * 4


def empty(num_streams: int, stream_capacity: int, observation_shape
          ) -> device_replay.DeviceArrays:
  """Return an empty replay of K streams of `stream_capacity` slots."""
  shape = (num_streams, stream_capacity)
  return device_replay.DeviceArrays(
      frames=jnp.zeros(shape + (packed_size(observation_shape),), jnp.uint8),
      actions=jnp.zeros(shape, jnp.int32),
      rewards=jnp.zeros(shape, jnp.float32),
      discounts=jnp.zeros(shape, jnp.float32),
      episode_steps=jnp.zeros(shape, jnp.int32),
      num_added=jnp.zeros(num_streams, jnp.int32))


def store(replay: device_replay.DeviceArrays, episode_step: jnp.ndarray,
          timestep, actions, max_abs_reward: float):
  """Add one step of the K streams (zoo.replay.frame_replay.FrameReplay.add's rules).

  Args:
    replay: one seed's arrays.
    episode_step: [K] int32, the step of each stream's episode so far.
    timestep: fields [K, ...], observations [K, 10, 10, C] binary uint8.
    actions: [K] int32, the actions taken on it.
    max_abs_reward: rewards are clipped to ± this.

  Returns:
    (replay, episode_step).
  """
  num_streams, capacity = replay.actions.shape
  chex.assert_rank(timestep.observation, 4)
  chex.assert_shape(actions, (num_streams,))
  chex.assert_axis_dimension(timestep.observation, 0, num_streams)
  first = timestep.step_type == environment.FIRST
  episode_step = jnp.where(first, 0, episode_step + 1)
  slot = replay.num_added % capacity
  streams = jnp.arange(num_streams)
  reward = jnp.clip(timestep.reward, -max_abs_reward, max_abs_reward)
  replay = device_replay.DeviceArrays(
      frames=replay.frames.at[streams, slot].set(pack(timestep.observation)),
      actions=replay.actions.at[streams, slot].set(actions),
      rewards=replay.rewards.at[streams, slot].set(reward),
      discounts=replay.discounts.at[streams, slot].set(timestep.discount),
      episode_steps=replay.episode_steps.at[streams, slot].set(episode_step),
      num_added=replay.num_added + 1)
  return replay, episode_step


def sample(replay: device_replay.DeviceArrays, rng_key, batch_size: int,
           observation_shape):
  """Return (rng_key, Transitions [B]) with stacks last [B, H, W, C, 1].

  zoo.replay.device_replay's uniform sampler over valid transitions and its gather,
  then the frames unpacked.
  """
  rng_key, stream, logical = device_replay.sample_indices(
      replay, rng_key, batch_size, num_stacked=1)
  packed = device_replay.gather(replay, stream, logical, 1)
  s_tm1 = unpack(packed.s_tm1[:, 0], observation_shape)[..., None]
  s_t = unpack(packed.s_t[:, 0], observation_shape)[..., None]
  return rng_key, packed._replace(s_tm1=s_tm1, s_t=s_t)
