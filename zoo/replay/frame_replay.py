"""Uniform replay of K streams that stores each frame once.

Stream k owns a circular region of `capacity // K` slots; a slot holds one
step's newest frame, episode step (0 on FIRST), clipped reward, discount and
the action chosen on it. Slot p (p >= 1 steps into its episode) gives the
transition from the stack at p - 1 to the stack at p + m - 1 (m = 1 unless
n-step returns: `NStep`), rebuilt on sampling; stacks follow DQN Zoo's layout
(zoo.environments.environment).
"""

from typing import Any, Dict, List, NamedTuple, Tuple

import numpy as np

from zoo.environments import environment


class Transitions(NamedTuple):
  """A batch of transitions; with `NStep.n` = 1, one step of each stream."""
  s_tm1: np.ndarray       # [B, H, W, S] uint8
  a_tm1: np.ndarray       # [B] int32
  # [B] float32: the clipped reward; n-step: sum_{k<m} γ^k r_{t+k}.
  r_t: np.ndarray
  # [B] float32: the environment discount; n-step: γ^(m-1) times the m
  # steps' environment discounts (the learner applies the last γ).
  discount_t: np.ndarray
  s_t: np.ndarray         # [B, H, W, S] uint8, m - 1 steps after slot t.


class NStep(NamedTuple):
  """A transition's return: up to `n` steps, `discount` (γ) between them.

  The sum stops after the first step of environment discount 0 (game over,
  life loss) and at its episode's last step. n = 1: one step, γ unused.
  """
  n: int = 1
  discount: float = 1.0


ONE_STEP = NStep()


def is_valid_transition(logical, episode_step, oldest, num_stacked: int,
                        xp=np):
  """Return whether slot `logical` gives a transition whose frames are held."""
  first_needed = logical - 1 - xp.minimum(episode_step - 1, num_stacked - 1)
  return (episode_step >= 1) & (first_needed >= oldest)


def _return_steps(discounts, episode_steps, stream, logical, n: int, xp,
                  num_added=None):
  """Return ([in_k for k in 1..n-1], held) of transitions (stream, logical).

  in_k [B]: whether step logical + k is in the return (the steps before it
  go on: nonzero discount, the same episode). held [B]: whether the stored
  steps (logical index < num_added [B]; None: all) decide every in_k.
  """
  capacity = episode_steps.shape[1]
  going = xp.ones(logical.shape, bool)
  held = xp.ones(logical.shape, bool)
  steps_in = []
  for k in range(1, n):
    going = going & (discounts[stream, (logical + k - 1) % capacity] != 0)
    if num_added is not None:
      stored = logical + k < num_added
      held = held & (stored | ~going)
      going = going & stored
    going = going & (episode_steps[stream, (logical + k) % capacity] != 0)
    steps_in.append(going)
  return steps_in, held


def return_is_held(discounts, episode_steps, stream, logical, num_added,
                   n: int, xp=np):
  """Return whether each transition's n steps (or up to a stop) are stored.

  `num_added` [B]: the steps ever added to each transition's stream.
  """
  return _return_steps(discounts, episode_steps, stream, logical, n, xp,
                       num_added)[1]


def transitions_at(frames, actions, rewards, discounts, episode_steps, stream,
                   logical, num_stacked: int, xp=np,
                   n_step: NStep = ONE_STEP) -> Transitions:
  """Return the transitions at (stream, logical index) [B], stacks [B, S, ...].

  The arrays are [K, C, ...] (slot = logical mod C); `xp`: numpy or jax.numpy.
  Each transition's return steps must be stored (`return_is_held`).
  """
  capacity = episode_steps.shape[1]
  slot_t = logical % capacity
  step_t = episode_steps[stream, slot_t]
  reward = rewards[stream, slot_t]
  discount = discounts[stream, slot_t]
  last = logical  # The step whose stack is s_t.
  steps_in, _ = _return_steps(discounts, episode_steps, stream, logical,
                              n_step.n, xp)
  gamma = np.float32(n_step.discount)
  for k, step_in in enumerate(steps_in, start=1):
    slot = (logical + k) % capacity
    weight = np.float32(n_step.discount**k)
    reward = reward + xp.where(step_in, weight * rewards[stream, slot],
                               np.float32(0))
    discount = discount * xp.where(step_in, gamma * discounts[stream, slot],
                                   np.float32(1))
    last = last + step_in
  step_last = episode_steps[stream, last % capacity]
  offsets = xp.arange(num_stacked)
  stacks = []
  for logical_s, step_s in ((logical - 1, step_t - 1), (last, step_last)):
    # The stack at logical_s holds its episode's frames up to it, the older
    # positions padded with zeros.
    count = xp.minimum(step_s, num_stacked - 1)[:, None] + 1
    index = logical_s[:, None] - (count - 1) + offsets
    stack = frames[stream[:, None], index % capacity]
    held = (offsets < count)[(...,) + (None,) * (frames.ndim - 2)]
    stacks.append(xp.where(held, stack, xp.zeros((), stack.dtype)))
  return Transitions(
      s_tm1=stacks[0],
      a_tm1=actions[stream, (logical - 1) % capacity],
      r_t=reward,
      discount_t=discount,
      s_t=stacks[1],
  )


class FrameReplay:
  """Uniform transition replay for K streams, one stored frame per step."""

  def __init__(self, capacity: int, num_streams: int, frame_shape=(84, 84),
               num_stacked_frames: int = 4, seed: int = 0,
               n_step: NStep = ONE_STEP):
    """Allocate `capacity` transitions, split evenly over the streams.

    `n_step`: the transitions' returns (`NStep`; default one step).
    """
    if num_streams < 1:
      raise ValueError(f'num_streams must be >= 1, got {num_streams}.')
    if num_stacked_frames < 1:
      raise ValueError(f'num_stacked_frames must be >= 1, got '
                       f'{num_stacked_frames}.')
    if n_step.n < 1:
      raise ValueError(f'n_steps must be >= 1, got {n_step.n}.')
    stream_capacity = capacity // num_streams
    if stream_capacity < num_stacked_frames + n_step.n:
      raise ValueError(
          f'replay_capacity={capacity} over {num_streams} streams leaves '
          f'{stream_capacity} slots per stream; need at least '
          f'{num_stacked_frames + n_step.n}. Raise the capacity.')
    self._num_streams = num_streams
    self._stream_capacity = stream_capacity
    self._num_stacked = num_stacked_frames
    self._n_step = n_step
    self._frame_shape = tuple(frame_shape)
    shape = (num_streams, stream_capacity)
    self._frames = np.zeros(shape + self._frame_shape, np.uint8)
    self._actions = np.zeros(shape, np.int32)
    self._rewards = np.zeros(shape, np.float32)
    self._discounts = np.zeros(shape, np.float32)
    self._episode_steps = np.zeros(shape, np.int32)
    self._num_added = np.zeros(num_streams, np.int64)  # Per stream, ever.
    self._episode_step = np.zeros(num_streams, np.int64)  # Current, per stream.
    self._rng = np.random.default_rng(seed)

  @property
  def capacity(self) -> int:
    return self._num_streams * self._stream_capacity

  @property
  def num_streams(self) -> int:
    return self._num_streams

  @property
  def size(self) -> int:
    """Return the number of steps held (all streams)."""
    return int(np.minimum(self._num_added, self._stream_capacity).sum())

  @property
  def nbytes(self) -> int:
    """Return the exact bytes of the replay's arrays once full."""
    return sum(a.nbytes for a in self._arrays().values())

  def _arrays(self) -> Dict[str, np.ndarray]:
    return dict(frames=self._frames, actions=self._actions,
                rewards=self._rewards, discounts=self._discounts,
                episode_steps=self._episode_steps)

  def add(self, step_type: np.ndarray, observation: np.ndarray,
          action: np.ndarray, reward: np.ndarray,
          discount: np.ndarray) -> None:
    """Add one step of every stream: [K] arrays, observations [K, H, W, S].

    `action`: chosen on `observation`; `reward`: clipped (ignored on FIRST).
    """
    k = self._num_streams
    if observation.shape != (k,) + self._frame_shape + (self._num_stacked,):
      raise ValueError(f'Expected observations {(k,) + self._frame_shape}'
                       f'+({self._num_stacked},), got {observation.shape}.')
    first = np.asarray(step_type) == 0
    self._episode_step = np.where(first, 0, self._episode_step + 1)
    slot = self._num_added % self._stream_capacity
    streams = np.arange(k)
    frame = observation[streams, ..., environment.newest_frame_index(
        self._episode_step, self._num_stacked)]
    for array, value in zip(self._arrays().values(), (
        frame, action, reward, discount, self._episode_step)):
      array[streams, slot] = value
    self._num_added += 1

  def _draw_valid(self, batch_size: int):
    """Draw (stream, logical index) of valid transitions, uniformly."""
    held = np.minimum(self._num_added, self._stream_capacity)
    oldest = self._num_added - held
    starts = np.cumsum(held) - held
    streams_out, logical_out = [], []
    num_found = 0
    for _ in range(1000):  # Rejection; invalid transitions are rare.
      u = self._rng.integers(self.size, size=2 * batch_size)
      stream = np.searchsorted(starts, u, side='right') - 1
      logical = oldest[stream] + (u - starts[stream])
      step = self._episode_steps[stream, logical % self._stream_capacity]
      valid = is_valid_transition(logical, step, oldest[stream],
                                  self._num_stacked) & return_is_held(
                                      self._discounts, self._episode_steps,
                                      stream, logical,
                                      self._num_added[stream], self._n_step.n)
      streams_out.append(stream[valid])
      logical_out.append(logical[valid])
      num_found += int(valid.sum())
      if num_found >= batch_size:
        stream = np.concatenate(streams_out)[:batch_size]
        logical = np.concatenate(logical_out)[:batch_size]
        return stream, logical
    raise ValueError('The replay holds no valid transition (every held step '
                     'is an episode start, or its n steps are not all '
                     'stored); add more steps before sampling.')

  def sample(self, batch_size: int, stacks_last: bool = True) -> Transitions:
    """Sample `batch_size` valid transitions uniformly.

    `stacks_last`: [B, H, W, S] stacks; False: [B, S, H, W] (no slow transpose).
    """
    if self.size == 0:
      raise ValueError('Cannot sample from an empty replay.')
    stream, logical = self._draw_valid(batch_size)
    return self.gather(stream, logical, stacks_last)

  def gather(self, stream: np.ndarray, logical: np.ndarray,
             stacks_last: bool = True) -> Transitions:
    """Return the transitions at (stream, logical index) pairs [B].

    A logical index counts a stream's steps (slot = logical mod capacity).
    """
    transitions = transitions_at(*self._arrays().values(), stream, logical,
                                 self._num_stacked, n_step=self._n_step)
    if stacks_last:
      last = lambda stack: np.ascontiguousarray(np.moveaxis(stack, 1, -1))
      transitions = transitions._replace(s_tm1=last(transitions.s_tm1),
                                         s_t=last(transitions.s_t))
    return transitions

  @property
  def num_steps(self) -> int:
    """Return the steps ever added (each adds one slot to every stream)."""
    return int(self._num_added[0])

  def steps(self, begin: int, end: int
            ) -> List[Tuple[int, Dict[str, np.ndarray]]]:
    """Return views of the steps [begin, end): (first, {name: [K, n, ...]}).

    The ring wraps: at most two pieces of contiguous slots, nothing copied.
    ValueError if the replay does not hold every step.
    """
    oldest = max(self.num_steps - self._stream_capacity, 0)
    if not oldest <= begin <= end <= self.num_steps:
      raise ValueError(f'Steps [{begin}, {end}) are not held: the replay holds '
                       f'[{oldest}, {self.num_steps}).')
    return [(first, {name: array[:, slot:slot + n]
                     for name, array in self._arrays().items()})
            for first, slot, n in self._slot_ranges(begin, end)]

  def put_steps(self, begin: int, arrays: Dict[str, np.ndarray]) -> None:
    """Write [K, n, ...] arrays (as `steps` returned them) as steps begin...

    Only the slots (the counters: `set_state`); of more than capacity / K
    steps, the newest.
    """
    n = arrays['frames'].shape[1]
    for name, array in self._arrays().items():
      shape = arrays[name].shape
      if shape != array.shape[:1] + (n,) + array.shape[2:]:
        raise ValueError(f'Replay steps {name} have shape {shape}, '
                         f'incompatible with {array.shape}.')
    skip = max(n - self._stream_capacity, 0)
    for first, slot, count in self._slot_ranges(begin + skip, begin + n):
      offset = first - begin
      for name, array in self._arrays().items():
        array[:, slot:slot + count] = arrays[name][:, offset:offset + count]

  def _slot_ranges(self, begin: int, end: int):
    """Yield (first step, first slot, count) of contiguous slot ranges."""
    cap = self._stream_capacity
    while begin < end:
      count = min(end - begin, cap - begin % cap)
      yield begin, begin % cap, count
      begin += count

  def get_state(self) -> Dict[str, Any]:
    """Return the counters and the RNG state (JSON-able; steps excluded)."""
    return {'num_added': self._num_added.tolist(),
            'episode_step': self._episode_step.tolist(),
            'rng_state': self._rng.bit_generator.state}

  def set_state(self, state: Dict[str, Any]) -> None:
    """Restore what `get_state` returned (the steps: `put_steps`)."""
    num_added = np.asarray(state['num_added'], np.int64)
    if num_added.shape != (self._num_streams,):
      raise ValueError(f'Replay state has {num_added.shape[0]} streams, this '
                       f'replay {self._num_streams}.')
    self._num_added = num_added.copy()
    self._episode_step = np.asarray(state['episode_step'], np.int64).copy()
    self._rng.bit_generator.state = state['rng_state']


def replay_bytes(capacity: int, frame_shape=(84, 84)) -> int:
  """Return the exact bytes a full FrameReplay of `capacity` steps uses."""
  per_step = int(np.prod(frame_shape)) + 4 * 4  # frame, action/reward/disc/step
  return capacity * per_step
