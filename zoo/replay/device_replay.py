"""The frame replay mirrored on the JAX device: sampling inside the update.

`DeviceFrameReplay` is a `zoo.replay.frame_replay.FrameReplay` (the host arrays stay the
source of truth: bookkeeping, `get_state`/`set_state`, checkpoints) whose
frames and per-slot scalars are also kept on the JAX device. Each `add`
uploads only that step's K new frames, written in place (donated buffers).
`sample` is a pure function of the device arrays and a PRNG key, so the
learner samples and assembles its stacks inside its own jitted computation:
no host sampling and no batch upload per update.

It draws uniformly over the same valid transitions as the host replay
(`zoo.replay.frame_replay.is_valid_transition`) and assembles the same stacks for the
same indices (`zoo.replay.frame_replay.stack_indices`); only the random draws differ (a
JAX key instead of numpy's generator).

Memory: the frames are held twice, once on the host and once on the
device: 2 x 7.1 GB for the default 1e6 transitions. Meant for accelerators
(an 80 GB GPU holds it); on a CPU both copies are in RAM.
"""

import functools
from typing import NamedTuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.replay import frame_replay as replay_lib

# Rejection rounds of `sample_indices`; each draws 2B candidates. Transitions
# are invalid only at episode starts and at the write head, so one round
# almost always suffices.
_MAX_ROUNDS = 100


class DeviceArrays(NamedTuple):
  """The replay's arrays on the device (a pytree; K streams, C slots each)."""
  frames: jax.Array         # [K, C, *frame_shape] uint8
  actions: jax.Array        # [K, C] int32
  rewards: jax.Array        # [K, C] float32, clipped
  discounts: jax.Array      # [K, C] float32
  episode_steps: jax.Array  # [K, C] int32
  num_added: jax.Array      # [K] int32, steps ever added per stream


def sample_indices(arrays: DeviceArrays, rng_key, batch_size: int,
                   num_stacked: int):
  """Return (rng_key, stream [B], logical [B]) of uniform valid transitions.

  The host replay's rejection sampler, jitted: draw uniformly over the held
  slots of all streams, keep the valid ones, until B are found.
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
    valid = replay_lib.is_valid_transition(logical, step, oldest[stream],
                                           num_stacked, xp=jnp)
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


def gather(arrays: DeviceArrays, stream, logical, num_stacked: int
           ) -> replay_lib.Transitions:
  """Return the transitions at (stream, logical) [B], stacks [B, S, *frame].

  Jitted code's zoo.replay.frame_replay.FrameReplay.gather(..., stacks_last=False).
  """
  capacity = arrays.episode_steps.shape[1]
  slot_t = logical % capacity
  slot_tm1 = (logical - 1) % capacity
  step_t = arrays.episode_steps[stream, slot_t]
  frame_rank = arrays.frames.ndim - 2
  stacks = []
  for logical_s, step_s in ((logical - 1, step_t - 1), (logical, step_t)):
    index, valid = replay_lib.stack_indices(logical_s, step_s, num_stacked,
                                            xp=jnp)
    frames = arrays.frames[stream[:, None], index % capacity]
    valid = valid.reshape(valid.shape + (1,) * frame_rank)
    stacks.append(jnp.where(valid, frames, jnp.zeros((), frames.dtype)))
  return replay_lib.Transitions(
      s_tm1=stacks[0],
      a_tm1=arrays.actions[stream, slot_tm1],
      r_t=arrays.rewards[stream, slot_t],
      discount_t=arrays.discounts[stream, slot_t],
      s_t=stacks[1],
  )


def sample(arrays: DeviceArrays, rng_key, batch_size: int, num_stacked: int):
  """Return (rng_key, Transitions [B]) drawn uniformly, stacks [B, S, ...]."""
  rng_key, stream, logical = sample_indices(arrays, rng_key, batch_size,
                                            num_stacked)
  return rng_key, gather(arrays, stream, logical, num_stacked)


def _write_step(arrays: DeviceArrays, slot, frame, action, reward, discount,
                episode_step) -> DeviceArrays:
  """Return the arrays with one step of every stream written at `slot` [K]."""
  streams = jnp.arange(slot.shape[0])
  return DeviceArrays(
      frames=arrays.frames.at[streams, slot].set(frame),
      actions=arrays.actions.at[streams, slot].set(action),
      rewards=arrays.rewards.at[streams, slot].set(reward),
      discounts=arrays.discounts.at[streams, slot].set(discount),
      episode_steps=arrays.episode_steps.at[streams, slot].set(episode_step),
      num_added=arrays.num_added + 1,
  )


class DeviceFrameReplay(replay_lib.FrameReplay):
  """A FrameReplay whose arrays are mirrored on the JAX device."""

  def __init__(self, *args, **kwargs):
    """Allocate the host replay and its device mirror (FrameReplay's args)."""
    super().__init__(*args, **kwargs)
    # The one place where this module's pure functions are jitted. Donating
    # the arrays makes each step's write in place (no copy of the replay).
    self._write_step = jax.jit(_write_step, donate_argnums=0)
    self.sampler = functools.partial(sample, num_stacked=self._num_stacked)
    self._device_arrays = self._upload()
    self._stale = False  # Host arrays changed outside `add` (a restore).

  @property
  def device_arrays(self) -> DeviceArrays:
    """Return the device arrays, to pass to a jitted `sampler` call."""
    self._sync()
    return self._device_arrays

  def _sync(self) -> None:
    """Upload the whole host replay if a restore changed it."""
    if self._stale:
      self._device_arrays = self._upload()
      self._stale = False

  def _upload(self) -> DeviceArrays:
    """Return a device copy of the host arrays."""
    # jnp.array copies: on a CPU, device_put may alias the numpy memory, which
    # the donated writes would then overwrite behind numpy's back.
    return jax.tree.map(jnp.array, DeviceArrays(
        frames=self._frames, actions=self._actions, rewards=self._rewards,
        discounts=self._discounts, episode_steps=self._episode_steps,
        num_added=self._num_added.astype(np.int32)))

  def add(self, step_type, observation, action, reward, discount) -> None:
    """Add one step of every stream (FrameReplay.add), then upload it."""
    self._sync()
    slot = self._num_added % self._stream_capacity
    super().add(step_type, observation, action, reward, discount)
    streams = np.arange(self._num_streams)
    self._device_arrays = self._write_step(
        self._device_arrays, slot.astype(np.int32),
        self._frames[streams, slot], self._actions[streams, slot],
        self._rewards[streams, slot], self._discounts[streams, slot],
        self._episode_steps[streams, slot])

  def set_state(self, state) -> None:
    """Restore the host counters (FrameReplay.set_state); upload them later."""
    super().set_state(state)
    self._stale = True

  def put_steps(self, begin, arrays) -> None:
    """Write steps on the host (FrameReplay.put_steps); upload them later.

    A restore calls set_state and then put_steps a few times: the whole
    replay is uploaded once, when the device arrays are next needed.
    """
    super().put_steps(begin, arrays)
    self._stale = True

  def check_sampleable(self) -> None:
    """Raise FrameReplay.sample's ValueError if nothing can be sampled.

    The device sampler cannot raise; call this (host, O(batch)) once before
    relying on it.
    """
    if self.size == 0:
      raise ValueError('Cannot sample from an empty replay.')
    self._draw_valid(1)
