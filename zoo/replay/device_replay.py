"""The frame replay mirrored on the JAX device, and its pure functions.

`DeviceFrameReplay` mirrors the host `FrameReplay` (the source of truth) on
the device, so the jitted learner samples there (docs/performance.md).
"""

import functools
from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp
import numpy as np

from zoo.environments import environment
from zoo.replay import frame_replay as replay_lib

# Rejection rounds of `sample_indices`; each draws 2B candidates. Transitions
# are invalid only at episode starts and at the write head (n-step: its
# newest n - 1 steps), so one round almost always suffices.
_MAX_ROUNDS = 100


class DeviceArrays(NamedTuple):
  """The replay's arrays on the device (a pytree; K streams, C slots each)."""
  frames: jax.Array         # [K, C, *frame_shape] uint8
  actions: jax.Array        # [K, C] int32
  rewards: jax.Array        # [K, C] float32, clipped
  discounts: jax.Array      # [K, C] float32
  episode_steps: jax.Array  # [K, C] int32
  num_added: jax.Array      # [K] int32, steps ever added per stream


class JaxReplay(NamedTuple):
  """A jitted loop's replay of one environment family: pure functions."""
  empty: Callable   # (K, slots per stream) -> DeviceArrays.
  # (arrays, episode_step [K], timestep [K], actions [K], max_abs_reward)
  # -> (arrays, episode_step).
  store: Callable
  # (arrays, rng_key, n) -> (rng_key, Transitions [n]), states as the
  # network takes them.
  sample: Callable
  nbytes: Callable  # (K, slots per stream) -> bytes of `empty`'s arrays.
  refuses: Callable  # (observations [K, ...]) -> bool: some it cannot store.
  refusal: str      # Why, and the fix.


def sample_indices(arrays: DeviceArrays, rng_key, batch_size: int,
                   num_stacked: int, n_steps: int = 1):
  """Return (rng_key, stream [B], logical [B]) of uniform valid transitions.

  Valid: FrameReplay's rules, of returns of up to `n_steps` steps.
  """
  capacity = arrays.episode_steps.shape[1]
  held = jnp.minimum(arrays.num_added, capacity)
  oldest = arrays.num_added - held
  starts = jnp.cumsum(held) - held
  total = jnp.sum(held)

  def round_(carry):
    key, found, stream_out, logical_out, rounds = carry
    key, draw_key = jax.random.split(key)
    u = jax.random.randint(draw_key, (2 * batch_size,), 0, total)
    stream = jnp.searchsorted(starts, u, side='right') - 1
    logical = oldest[stream] + (u - starts[stream])
    step = arrays.episode_steps[stream, logical % capacity]
    valid = replay_lib.is_valid_transition(
        logical, step, oldest[stream], num_stacked, xp=jnp
    ) & replay_lib.return_is_held(arrays.discounts, arrays.episode_steps,
                                  stream, logical, arrays.num_added[stream],
                                  n_steps, xp=jnp)
    # The valid draws fill the next free positions, in draw order.
    position = jnp.where(valid, found + jnp.cumsum(valid) - 1, batch_size)
    stream_out = stream_out.at[position].set(stream, mode='drop')
    logical_out = logical_out.at[position].set(logical, mode='drop')
    found = jnp.minimum(found + jnp.sum(valid), batch_size)
    return key, found, stream_out, logical_out, rounds + 1

  def more_needed(carry):
    _, found, _, _, rounds = carry
    return (found < batch_size) & (rounds < _MAX_ROUNDS)

  empty = jnp.zeros(batch_size, jnp.int32)
  key, _, stream, logical, _ = jax.lax.while_loop(
      more_needed, round_,
      (rng_key, jnp.int32(0), empty, empty, jnp.int32(0)))
  return key, stream, logical


def gather(arrays: DeviceArrays, stream, logical, num_stacked: int,
           n_step: replay_lib.NStep = replay_lib.ONE_STEP
           ) -> replay_lib.Transitions:
  """FrameReplay.gather(stream, logical, stacks_last=False), in JAX."""
  return replay_lib.transitions_at(*arrays[:5], stream, logical, num_stacked,
                                   xp=jnp, n_step=n_step)


def sample(arrays: DeviceArrays, rng_key, batch_size: int, num_stacked: int,
           n_step: replay_lib.NStep = replay_lib.ONE_STEP):
  """Return (rng_key, Transitions [B]) drawn uniformly, stacks [B, S, ...]."""
  rng_key, stream, logical = sample_indices(arrays, rng_key, batch_size,
                                            num_stacked, n_step.n)
  return rng_key, gather(arrays, stream, logical, num_stacked, n_step)


def empty(num_streams: int, stream_capacity: int, frame_shape) -> DeviceArrays:
  """Return empty arrays of K streams of `stream_capacity` uint8-frame slots."""
  shape = (num_streams, stream_capacity)
  return DeviceArrays(
      frames=jnp.zeros(shape + tuple(frame_shape), jnp.uint8),
      actions=jnp.zeros(shape, jnp.int32),
      rewards=jnp.zeros(shape, jnp.float32),
      discounts=jnp.zeros(shape, jnp.float32),
      episode_steps=jnp.zeros(shape, jnp.int32),
      num_added=jnp.zeros(num_streams, jnp.int32))


def nbytes(num_streams: int, stream_capacity: int, frame_bytes: int) -> int:
  """Return the bytes of `empty`'s arrays, given one frame's bytes."""
  return num_streams * (stream_capacity * (frame_bytes + 4 * 4) + 4)


def write_step(arrays: DeviceArrays, slot, frame, action, reward, discount,
               episode_step) -> DeviceArrays:
  """Return the arrays with one step of every stream written at `slot` [K]."""
  streams = jnp.arange(slot.shape[0])
  values = (frame, action, reward, discount, episode_step)
  return DeviceArrays(*(array.at[streams, slot].set(value)
                        for array, value in zip(arrays[:5], values)),
                      num_added=arrays.num_added + 1)


def store(arrays: DeviceArrays, episode_step, timestep, actions,
          max_abs_reward: float, frame_of):
  """Add one step of the K streams by FrameReplay.add's rules.

  Returns (arrays, episode_step). `episode_step` [K]: each stream's before
  this step; `actions` [K]: chosen on `timestep`; rewards are clipped to
  ±`max_abs_reward`; `frame_of(observation, episode_step)`: the frames kept.
  """
  chex.assert_shape(actions, arrays.num_added.shape)
  first = timestep.step_type == environment.FIRST
  episode_step = jnp.where(first, 0, episode_step + 1)
  reward = jnp.clip(timestep.reward, -max_abs_reward, max_abs_reward)
  slot = arrays.num_added % arrays.actions.shape[1]
  frame = frame_of(timestep.observation, episode_step)
  return write_step(arrays, slot, frame, actions, reward, timestep.discount,
                    episode_step), episode_step


class DeviceFrameReplay(replay_lib.FrameReplay):
  """A FrameReplay whose arrays are mirrored on the JAX device."""

  def __init__(self, *args, **kwargs):
    """Allocate the host replay and its device mirror (FrameReplay's args)."""
    super().__init__(*args, **kwargs)
    # The one place where this module's pure functions are jitted. Donating
    # the arrays makes each step's write in place (no copy of the replay).
    self._write_step = jax.jit(write_step, donate_argnums=0)
    self.sampler = functools.partial(sample, num_stacked=self._num_stacked,
                                     n_step=self._n_step)
    self._device_arrays = self._upload()

  @property
  def device_arrays(self) -> DeviceArrays:
    """Return the device arrays, to pass to a jitted `sampler` call."""
    if self._device_arrays is None:  # A restore changed the host arrays.
      self._device_arrays = self._upload()
    return self._device_arrays

  def _upload(self) -> DeviceArrays:
    # jnp.array copies: on a CPU, device_put may alias the numpy memory, which
    # the donated writes would then overwrite behind numpy's back.
    return jax.tree.map(jnp.array, DeviceArrays(
        *self._arrays().values(), self._num_added.astype(np.int32)))

  def add(self, step_type, observation, action, reward, discount) -> None:
    arrays = self.device_arrays  # Before the host adds the step.
    slot = self._num_added % self._stream_capacity
    super().add(step_type, observation, action, reward, discount)
    streams = np.arange(self._num_streams)
    self._device_arrays = self._write_step(
        arrays, slot.astype(np.int32),
        *(array[streams, slot] for array in self._arrays().values()))

  def set_state(self, state) -> None:
    super().set_state(state)
    self._device_arrays = None

  def put_steps(self, begin, arrays) -> None:
    # A restore calls set_state, then put_steps a few times: the whole replay
    # is uploaded once, when the device arrays are next needed.
    super().put_steps(begin, arrays)
    self._device_arrays = None

  def check_sampleable(self) -> None:
    """Raise FrameReplay.sample's ValueError (the device sampler cannot)."""
    if self.size == 0:
      raise ValueError('Cannot sample from an empty replay.')
    self._draw_valid(1)
