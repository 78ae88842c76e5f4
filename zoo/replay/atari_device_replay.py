"""An Atari replay on the device only: pure functions for jitted loops.

device_replay's arrays, one uint8 frame [84, 84] per slot: DQN Zoo's 1M
transitions take 7.07 GB, allocated at once by `empty`. `store` writes in
place only where XLA may reuse the buffer (a scan carry, a donated call).
"""

from typing import Optional, Tuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from zoo.replay import device_replay
from zoo.replay import frame_replay

FRAME_SHAPE: Tuple[int, int] = (84, 84)
NUM_STACKED = 4


def nbytes(num_streams: int, stream_capacity: int,
           frame_shape=FRAME_SHAPE) -> int:
  """Return the bytes of the replay's arrays (what `empty` allocates)."""
  return device_replay.nbytes(num_streams, stream_capacity,
                              int(np.prod(frame_shape)))


def empty(num_streams: int, stream_capacity: int, frame_shape=FRAME_SHAPE,
          num_stacked: int = NUM_STACKED, n_steps: int = 1
          ) -> device_replay.DeviceArrays:
  """Return an empty replay of K streams of `stream_capacity` slots each."""
  if num_streams < 1:
    raise ValueError(f'num_streams must be >= 1, got {num_streams}.')
  if stream_capacity < num_stacked + n_steps:
    raise ValueError(
        f'A replay of {stream_capacity} slots per stream cannot hold a '
        f'transition of {num_stacked}-frame stacks over {n_steps} step(s); '
        f'give each stream at least {num_stacked + n_steps} (raise the '
        'capacity or lower num_envs).')
  return device_replay.empty(num_streams, stream_capacity, frame_shape)


def store(replay: device_replay.DeviceArrays, episode_step: jax.Array,
          timestep, actions: jax.Array, max_abs_reward: float,
          frame: Optional[jax.Array] = None):
  """device_replay.store of DQN Zoo stacks [K, H, W, S], keeping one frame.

  `frame` [K, H, W]: the step's newest frame where the environment gives it;
  None: taken from the stacks.
  """
  frame_shape = replay.frames.shape[2:]
  chex.assert_shape(timestep.observation,
                    replay.actions.shape[:1] + frame_shape + (None,))

  def frame_of(observation, episode_step):
    kept = frame
    if frame is None:  # environment.newest_frame_index, in JAX.
      index = jnp.minimum(episode_step, observation.shape[-1] - 1)
      kept = jnp.take_along_axis(observation, index[:, None, None, None],
                                 axis=-1)[..., 0]
    chex.assert_shape(kept, replay.actions.shape[:1] + frame_shape)
    return kept.astype(jnp.uint8)

  return device_replay.store(replay, episode_step, timestep, actions,
                             max_abs_reward, frame_of)


def sample(replay: device_replay.DeviceArrays, rng_key, batch_size: int,
           num_stacked: int = NUM_STACKED, stacks_last: bool = True,
           n_step: frame_replay.NStep = frame_replay.ONE_STEP):
  """Return (rng_key, Transitions [B]) drawn uniformly over valid transitions.

  Under jit nothing checks that one is held. Stacks [B, H, W, S] with
  `stacks_last`, else [B, S, H, W]; `n_step`: the returns (FrameReplay's).
  """
  rng_key, stream, logical = device_replay.sample_indices(
      replay, rng_key, batch_size, num_stacked, n_step.n)
  return rng_key, gather(replay, stream, logical, num_stacked, stacks_last,
                         n_step)


def gather(replay: device_replay.DeviceArrays, stream, logical,
           num_stacked: int = NUM_STACKED, stacks_last: bool = True,
           n_step: frame_replay.NStep = frame_replay.ONE_STEP):
  """Return the transitions at (stream, logical index) [B], as FrameReplay's."""
  transitions = device_replay.gather(replay, stream, logical, num_stacked,
                                     n_step)
  if stacks_last:
    transitions = transitions._replace(
        s_tm1=jnp.moveaxis(transitions.s_tm1, 1, -1),
        s_t=jnp.moveaxis(transitions.s_t, 1, -1))
  return transitions


def jax_replay(n_step: frame_replay.NStep = frame_replay.ONE_STEP
               ) -> device_replay.JaxReplay:
  """Return this replay for the jitted loop (stacks last, as the network's).

  `n_step`: the sampled transitions' returns.
  """
  return device_replay.JaxReplay(
      empty=lambda k, slots: empty(k, slots, n_steps=n_step.n),
      store=lambda arrays, episode_step, timestep, actions, max_abs_reward:
      store(arrays, episode_step, timestep, actions, max_abs_reward,
            frame=timestep.frame),
      sample=lambda arrays, key, n: sample(arrays, key, n, n_step=n_step),
      nbytes=nbytes,
      refuses=lambda observation: jnp.bool_(False),
      refusal='')
