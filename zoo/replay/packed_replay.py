"""MinAtar's replay in the jitted loop: device_replay's arrays, frames as bits.

Each binary 10x10xC frame is bit-packed to ceil(100 C / 8) bytes. Pure
functions, for the jitted loop's scan (zoo.loops.jitted_train).
"""

import chex
import jax.numpy as jnp
import numpy as np

from zoo.replay import device_replay
from zoo.replay import frame_replay


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
  return device_replay.nbytes(num_streams, stream_capacity,
                              packed_size(observation_shape))


def empty(num_streams: int, stream_capacity: int, observation_shape
          ) -> device_replay.DeviceArrays:
  """Return an empty replay of K streams of `stream_capacity` slots."""
  return device_replay.empty(num_streams, stream_capacity,
                             (packed_size(observation_shape),))


def store(replay: device_replay.DeviceArrays, episode_step: jnp.ndarray,
          timestep, actions, max_abs_reward: float):
  """device_replay.store of binary observations [K, 10, 10, C], packed."""
  chex.assert_rank(timestep.observation, 4)
  chex.assert_axis_dimension(timestep.observation, 0, replay.actions.shape[0])
  return device_replay.store(replay, episode_step, timestep, actions,
                             max_abs_reward, lambda observation, _: pack(
                                 observation))


def sample(replay: device_replay.DeviceArrays, rng_key, batch_size: int,
           observation_shape,
           n_step: frame_replay.NStep = frame_replay.ONE_STEP):
  """Return (rng_key, Transitions [B]) with stacks last [B, H, W, C, 1].

  `n_step`: the returns (FrameReplay's).
  """
  rng_key, stream, logical = device_replay.sample_indices(
      replay, rng_key, batch_size, 1, n_step.n)
  packed = device_replay.gather(replay, stream, logical, 1, n_step)
  s_tm1 = unpack(packed.s_tm1[:, 0], observation_shape)[..., None]
  s_t = unpack(packed.s_t[:, 0], observation_shape)[..., None]
  return rng_key, packed._replace(s_tm1=s_tm1, s_t=s_t)


def jax_replay(observation_shape,
               n_step: frame_replay.NStep = frame_replay.ONE_STEP
               ) -> device_replay.JaxReplay:
  """Return this replay for binary observations of `observation_shape`.

  `n_step`: the sampled transitions' returns.
  """
  shape = tuple(observation_shape)
  return device_replay.JaxReplay(
      empty=lambda k, slots: empty(k, slots, shape),
      store=store,
      sample=lambda arrays, key, n: sample(arrays, key, n, shape, n_step),
      nbytes=lambda k, slots: nbytes(k, slots, shape),
      refuses=lambda observation: jnp.any(observation > 1),
      refusal=('The environment emitted observations other than 0/1; this '
               'replay stores bits. Use an environment of binary '
               'observations.'))
