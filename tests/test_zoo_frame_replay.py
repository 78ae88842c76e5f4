"""Tests for zoo.replay.frame_replay: exact stack reconstruction, validity, O(batch) cost."""

import json

import numpy as np
import pytest

from zoo.environments import environment
from zoo.replay import frame_replay as replay_lib

H, W, S = 2, 3, 4


def _stack(frames, padding):
  frames = list(frames[-S:])
  zeros = [np.zeros((H, W), np.uint8)] * (S - len(frames))
  ordered = frames + zeros if padding == 'trailing' else zeros + frames
  return np.stack(ordered, axis=-1)


class FakeStackingEnv:
  """K streams of random-length episodes emitting unique, stacked frames."""

  def __init__(self, num_streams, padding, seed=0, max_len=9):
    self.num_envs = num_streams
    self._padding = padding
    self._rng = np.random.default_rng(seed)
    self._max_len = max_len
    self._t = 0
    self._frames = [[] for _ in range(num_streams)]
    self._left = np.zeros(num_streams, int)
    self._last = np.ones(num_streams, bool)

  def _new_frame(self, k):
    # Distinct content for every (stream, global step), never all-zero.
    return np.array([[k + 1, self._t % 256, self._t // 256 + 1],
                     [7, self._rng.integers(1, 255), 3]], np.uint8)

  def step(self):
    """Return (step_type, observation, reward, discount) of every stream."""
    self._t += 1
    step_type = np.zeros(self.num_envs, np.int8)
    obs = np.zeros((self.num_envs, H, W, S), np.uint8)
    for k in range(self.num_envs):
      if self._last[k]:
        self._frames[k] = []
        self._left[k] = self._rng.integers(1, self._max_len)
        self._last[k] = False
        step_type[k] = 0
      else:
        self._left[k] -= 1
        step_type[k] = 2 if self._left[k] == 0 else 1
        self._last[k] = self._left[k] == 0
      self._frames[k].append(self._new_frame(k))
      obs[k] = _stack(self._frames[k], self._padding)
    reward = self._rng.normal(size=self.num_envs).astype(np.float32)
    discount = (self._rng.random(self.num_envs) > 0.2).astype(np.float32)
    return step_type, obs, reward, discount


def _fill(replay, env, num_steps, seed=1):
  """Add num_steps steps; return every transition, tagged by its add index."""
  rng = np.random.default_rng(seed)
  history = []  # Per step: the arrays added.
  for _ in range(num_steps):
    step_type, obs, reward, discount = env.step()
    action = rng.integers(0, 5, size=env.num_envs).astype(np.int32)
    replay.add(step_type, obs, action, reward, discount)
    history.append((step_type, obs, action, reward, discount))
  return history


def _valid_transitions(history, stream_capacity, num_stacked):
  """Return {key: transition} of the valid transitions still fully held."""
  num_steps = len(history)
  oldest = max(0, num_steps - stream_capacity)
  out = {}
  num_streams = history[0][0].shape[0]
  for k in range(num_streams):
    episode_step = None
    steps = []
    for t in range(num_steps):
      step_type = history[t][0][k]
      episode_step = 0 if step_type == 0 else episode_step + 1
      steps.append(episode_step)
    for t in range(1, num_steps):
      if steps[t] == 0:
        continue
      first_needed = t - 1 - min(steps[t] - 1, num_stacked - 1)
      if first_needed < oldest:
        continue
      prev, cur = history[t - 1], history[t]
      key = (prev[1][k].tobytes(), int(prev[2][k]), float(cur[3][k]),
             float(cur[4][k]), cur[1][k].tobytes())
      out[key] = True
  return out


def valid_indices(replay):
  """Return (stream [V], logical [V]) of every transition the replay holds."""
  # pylint: disable=protected-access
  cap, num_added = replay._stream_capacity, replay._num_added
  streams, logicals = [], []
  for k in range(replay.num_streams):
    held = int(min(num_added[k], cap))
    logical = np.arange(num_added[k] - held, num_added[k])
    step = replay._episode_steps[k, logical % cap]
    valid = replay_lib.is_valid_transition(logical, step, num_added[k] - held,
                                           replay._num_stacked)
    streams.append(np.full(int(valid.sum()), k))
    logicals.append(logical[valid])
  return np.concatenate(streams), np.concatenate(logicals)


def _keys(transitions):
  return [(transitions.s_tm1[i].tobytes(), int(transitions.a_tm1[i]),
           float(transitions.r_t[i]), float(transitions.discount_t[i]),
           transitions.s_t[i].tobytes())
          for i in range(transitions.a_tm1.shape[0])]


@pytest.mark.parametrize('num_streams', [1, 3])
def test_samples_are_exactly_the_emitted_valid_transitions(num_streams):
  stream_capacity = 40
  replay = replay_lib.FrameReplay(stream_capacity * num_streams, num_streams,
                                  (H, W), S, seed=3)
  env = FakeStackingEnv(num_streams, 'trailing', seed=num_streams)
  # Wrap around the circular regions more than twice.
  history = _fill(replay, env, 2 * stream_capacity + 17)
  valid = _valid_transitions(history, stream_capacity, S)
  sampled = set()
  for _ in range(60):
    for key in _keys(replay.sample(32)):
      assert key in valid, 'sampled a transition the env never emitted'
      sampled.add(key)
  # Uniform sampling with 1920 draws visits every valid transition.
  assert sampled == set(valid)


def test_first_stack_padding_rules():
  for padding, expected_slot in [('trailing', 0), ('leading', S - 1)]:
    env = FakeStackingEnv(1, padding)
    _, obs, _, _ = env.step()
    assert np.all(obs[0, ..., expected_slot] > 0)
    assert np.count_nonzero(obs[0].reshape(-1, S).any(axis=0)) == 1


def test_wrong_padding_rule_is_detected():
  """Reading a leading-padded env as trailing must break reconstruction."""
  replay = replay_lib.FrameReplay(60, 1, (H, W), S)
  env = FakeStackingEnv(1, 'leading', max_len=3)
  history = _fill(replay, env, 50)
  valid = _valid_transitions(history, 60, S)
  keys = _keys(replay.sample(64))
  assert not all(key in valid for key in keys)


def test_never_samples_into_first_or_across_write_head():
  replay = replay_lib.FrameReplay(10, 1, (H, W), S, seed=0)
  env = FakeStackingEnv(1, 'trailing', max_len=4)
  history = _fill(replay, env, 23)
  valid = _valid_transitions(history, 10, S)
  for key in _keys(replay.sample(500)):
    assert key in valid


def test_stacks_first_layout_is_a_transpose():
  replay = replay_lib.FrameReplay(60, 2, (H, W), S, seed=4)
  _fill(replay, FakeStackingEnv(2, 'trailing'), 40)
  state = replay.get_state()
  last = replay.sample(16)
  replay.set_state(state)  # Same RNG state: the same draws.
  first = replay.sample(16, stacks_last=False)
  assert first.s_t.shape == (16, S, H, W) and first.s_t.flags.c_contiguous
  np.testing.assert_array_equal(np.moveaxis(first.s_t, 1, -1), last.s_t)
  np.testing.assert_array_equal(np.moveaxis(first.s_tm1, 1, -1), last.s_tm1)
  np.testing.assert_array_equal(first.a_tm1, last.a_tm1)


def test_only_first_steps_cannot_be_sampled():
  replay = replay_lib.FrameReplay(10, 1, (H, W), S)
  obs = np.zeros((1, H, W, S), np.uint8)
  replay.add(np.zeros(1, np.int8), obs, np.zeros(1), np.zeros(1), np.ones(1))
  with pytest.raises(ValueError, match='no valid transition'):
    replay.sample(4)


@pytest.mark.parametrize('num_steps', [20, 47])  # Not full; wrapped.
def test_state_and_steps_round_trip_restores_samples(num_steps):
  replay = replay_lib.FrameReplay(90, 3, (H, W), S, seed=5)  # 30 per stream.
  _fill(replay, FakeStackingEnv(3, 'trailing', seed=2), num_steps)
  state = json.loads(json.dumps(replay.get_state()))  # Stored as JSON.
  held_from = max(num_steps - 30, 0)
  middle = (held_from + num_steps) // 2
  # As checkpoints store them: two chunks, each in one or two slot ranges.
  pieces = replay.steps(held_from, middle) + replay.steps(middle, num_steps)
  assert len(pieces) == (3 if num_steps == 47 else 2)
  restored = replay_lib.FrameReplay(90, 3, (H, W), S, seed=99)
  restored.set_state(state)
  for begin, arrays in pieces:
    restored.put_steps(begin, {k: np.array(v) for k, v in arrays.items()})
  a, b = replay.sample(16), restored.sample(16)
  for x, y in zip(a, b):
    np.testing.assert_array_equal(x, y)
  assert restored.size == replay.size == 3 * min(num_steps, 30)


def test_steps_are_views_of_held_steps_only():
  replay = replay_lib.FrameReplay(20, 2, (H, W), S)  # 10 per stream.
  _fill(replay, FakeStackingEnv(2, 'trailing'), 13)
  pieces = replay.steps(3, 13)  # Slots 3..9, then 0..2.
  assert [(b, a['frames'].shape[1]) for b, a in pieces] == [(3, 7), (10, 3)]
  assert all(np.shares_memory(a['frames'], replay._frames) for _, a in pieces)
  assert replay.steps(13, 13) == []
  with pytest.raises(ValueError, match=r'not held: the replay holds \[3, 13\)'):
    replay.steps(2, 13)


def test_put_steps_keeps_the_newest_when_given_more_than_capacity():
  replay = replay_lib.FrameReplay(4, 1, (H, W), 1)
  frames = np.arange(6 * H * W, dtype=np.uint8).reshape(1, 6, H, W)
  arrays = dict(frames=frames, actions=np.zeros((1, 6), np.int32),
                rewards=np.zeros((1, 6), np.float32),
                discounts=np.zeros((1, 6), np.float32),
                episode_steps=np.zeros((1, 6), np.int32))
  replay.put_steps(0, arrays)
  replay.set_state({'num_added': [6], 'episode_step': [0],
                    'rng_state': replay.get_state()['rng_state']})
  (begin, first), (_, second) = replay.steps(2, 6)
  np.testing.assert_array_equal(
      np.concatenate([first['frames'], second['frames']], axis=1),
      frames[:, 2:])
  assert begin == 2


def test_bad_arguments_are_refused():
  with pytest.raises(ValueError, match='slots per stream'):
    replay_lib.FrameReplay(8, 4, (H, W), S)


def test_default_replay_fits_in_8_gb():
  # 1e6 steps: one 84x84 frame (7056 B) + 16 B of scalars each.
  assert replay_lib.replay_bytes(10**6) == 10**6 * (84 * 84 + 16)
  assert replay_lib.replay_bytes(10**6) < 7.1e9
  small = replay_lib.FrameReplay(1000, 4, (84, 84), 4)
  assert small.nbytes == replay_lib.replay_bytes(1000)


def test_sampling_cost_does_not_grow_with_capacity():
  """The sampler touches O(batch) memory: count the gathered elements."""
  for capacity in (1000, 200_000):
    replay = replay_lib.FrameReplay(capacity, 2, (H, W), S)
    env = FakeStackingEnv(2, 'trailing')
    _fill(replay, env, 30)
    batch = replay.sample(32)
    assert batch.s_t.shape == (32, H, W, S)
    assert batch.s_tm1.nbytes == 32 * H * W * S


def test_frames_of_any_rank_unstacked_come_back_exactly():
  # MinAtar's layout: frames [10, 10, C] of object channels, stack of one.
  rng = np.random.default_rng(0)
  num_streams, frame_shape, num_steps = 2, (10, 10, 3), 12
  replay = replay_lib.FrameReplay(100, num_streams, frame_shape, 1, seed=0)
  observations = rng.integers(0, 2, (num_steps, num_streams) + frame_shape +
                              (1,)).astype(np.uint8)
  step_types = np.ones((num_steps, num_streams), np.int8)
  step_types[0] = 0
  for t in range(num_steps):
    replay.add(step_types[t], observations[t], np.full(num_streams, t),
               np.zeros(num_streams, np.float32),
               np.ones(num_streams, np.float32))
  batch = replay.sample(64)
  assert batch.s_t.shape == (64,) + frame_shape + (1,)
  for s_tm1, a_tm1, s_t in zip(batch.s_tm1, batch.a_tm1, batch.s_t):
    # Step t's action is t: it names the observations of the transition.
    assert any((observations[a_tm1, k] == s_tm1).all() and
               (observations[a_tm1 + 1, k] == s_t).all()
               for k in range(num_streams))


def test_valid_indices_gather_exactly_the_emitted_valid_transitions():
  replay = replay_lib.FrameReplay(120, 3, (H, W), S)
  history = _fill(replay, FakeStackingEnv(3, 'trailing', seed=4), 2 * 40 + 17)
  stream, logical = valid_indices(replay)
  keys = _keys(replay.gather(stream, logical))
  assert len(keys) == len(set(keys))  # Each transition once.
  assert set(keys) == set(_valid_transitions(history, 40, S))


# n-step returns, against a trace computed by hand: n = 3, γ = 1/2 (exact in
# float32), K = 2 streams of 7 slots, stacks of S = 2 frames [1, 1]. Per
# stream, (step type, reward, discount) of steps 0..12.
N_STEP = replay_lib.NStep(n=3, discount=0.5)
_F, _M, _L = 0, 1, 2
_TRACE = (
    # A life loss (discount 0 inside the episode) at step 8, game over at 10.
    ((_F, 0, 1),) + ((_M, 9, 1),) * 4 + (
        (_M, 1, 1), (_M, 2, 1), (_M, 4, 1), (_M, 8, 0), (_M, 16, 1),
        (_L, 32, 0), (_F, 0, 1), (_M, 1, 1)),
    # A time limit (last step, discount 1) at 9; a life loss at step 12.
    ((_F, 0, 1),) + ((_M, 9, 1),) * 4 + (
        (_M, 1, 1), (_M, -1, 1), (_M, 2, 1), (_M, 4, 1), (_L, 8, 1),
        (_F, 0, 1), (_M, 1, 1), (_M, 4, 0)),
)
# (stream, logical index): (s_tm1, a_tm1, r_t, discount_t, s_t), the stacks
# as their frames (step t of stream k shows frame 1 + t + 100 k and takes
# action t + 50 k). After steps 0..11 the slots hold steps 5..11 (the ring
# wrapped: logical 7 is slot 0); step 12 then overwrites step 5.
HAND_AFTER_12_STEPS = {
    (0, 7): ((6, 7), 6, 8.0, 0.0, (8, 9)),       # 4 + 8/2; life loss at 8.
    (0, 8): ((7, 8), 7, 8.0, 0.0, (8, 9)),       # The life loss itself.
    (0, 9): ((8, 9), 8, 32.0, 0.0, (10, 11)),    # 16 + 32/2; game over.
    (0, 10): ((9, 10), 9, 32.0, 0.0, (10, 11)),
    (1, 7): ((106, 107), 56, 6.0, 0.25, (109, 110)),  # 2 + 4/2 + 8/4.
    (1, 8): ((107, 108), 57, 8.0, 0.5, (109, 110)),   # 4 + 8/2; time limit.
    (1, 9): ((108, 109), 58, 8.0, 1.0, (109, 110)),
}
# Not valid: steps 5, 6 (their stacks need overwritten frames), 11 of stream
# 0 (FIRST), 10 of stream 1 (FIRST) and 11 of stream 1 (steps 12, 13 of its
# return not stored yet).
HAND_AFTER_13_STEPS = {
    (0, 8): ((7, 8), 7, 8.0, 0.0, (8, 9)),
    (0, 9): ((8, 9), 8, 32.0, 0.0, (10, 11)),
    (0, 10): ((9, 10), 9, 32.0, 0.0, (10, 11)),
    (1, 8): ((107, 108), 57, 8.0, 0.5, (109, 110)),
    (1, 9): ((108, 109), 58, 8.0, 1.0, (109, 110)),
    # The stop (life loss at step 12) is stored: valid at the write head.
    (1, 11): ((111, 0), 60, 3.0, 0.0, (112, 113)),    # 1 + 4/2; padded.
    (1, 12): ((111, 112), 61, 4.0, 0.0, (112, 113)),
}
# Step 12 of stream 0 waits for steps 13 and 14.


def hand_steps(num_steps):
  """Return the first steps of _TRACE: [(step_type, observation [K, 1, 1, 2],
  action, reward, discount)], each [K]."""
  steps = []
  frames = [[], []]
  for t in range(num_steps):
    step_type, reward, discount = np.array(
        [_TRACE[k][t] for k in range(2)], np.float32).T
    observation = []
    for k in range(2):
      if step_type[k] == _F:
        frames[k] = []
      frames[k].append(np.full((1, 1), 1 + t + 100 * k, np.uint8))
      observation.append(environment.stack_frames(frames[k], 2))
    steps.append((step_type.astype(np.int8), np.stack(observation),
                  np.array([t, t + 50], np.int32), reward, discount))
  return steps


def hand_replay(num_steps, replay_class=replay_lib.FrameReplay,
                n_step=N_STEP):
  """Return a replay of 7 slots per stream fed the first steps of _TRACE."""
  replay = replay_class(14, 2, (1, 1), 2, seed=0, n_step=n_step)
  for step in hand_steps(num_steps):
    replay.add(*step)
  return replay


def n_step_valid_indices(replay):
  """Return (stream [V], logical [V]) of the held transitions it may sample."""
  # pylint: disable=protected-access
  stream, logical = valid_indices(replay)
  held = replay_lib.return_is_held(
      replay._discounts, replay._episode_steps, stream, logical,
      replay._num_added[stream], replay._n_step.n)
  return stream[held], logical[held]


def as_hand_values(transitions):
  """Return {i: (s_tm1, a_tm1, r_t, discount_t, s_t)}, as the hand tables."""
  stack = lambda s: tuple(int(f) for f in np.asarray(s).reshape(-1))
  return [(stack(transitions.s_tm1[i]), int(transitions.a_tm1[i]),
           float(transitions.r_t[i]), float(transitions.discount_t[i]),
           stack(transitions.s_t[i]))
          for i in range(len(transitions.a_tm1))]


@pytest.mark.parametrize('num_steps,hand', [(12, HAND_AFTER_12_STEPS),
                                            (13, HAND_AFTER_13_STEPS)])
def test_n_step_transitions_are_the_hand_computed_ones(num_steps, hand):
  replay = hand_replay(num_steps)
  stream, logical = n_step_valid_indices(replay)
  assert list(zip(stream.tolist(), logical.tolist())) == list(hand)
  got = as_hand_values(replay.gather(stream, logical))
  assert dict(zip(hand, got)) == hand
  # The sampler draws exactly these.
  drawn = replay._draw_valid(500)  # pylint: disable=protected-access
  assert set(zip(*(x.tolist() for x in drawn))) == set(hand)


def test_one_step_transitions_ignore_the_discount():
  replay = hand_replay(12, n_step=replay_lib.NStep(1, 0.5))
  stream, logical = valid_indices(replay)
  one_step = hand_replay(12, n_step=replay_lib.ONE_STEP)
  for got, want in zip(replay.gather(stream, logical),
                       one_step.gather(stream, logical)):
    np.testing.assert_array_equal(got, want)
  transitions = one_step.gather(stream, logical)
  assert transitions.r_t.tolist() == [
      _TRACE[k][t][1] for k, t in zip(stream, logical)]
  assert transitions.discount_t.tolist() == [
      _TRACE[k][t][2] for k, t in zip(stream, logical)]


def test_n_step_replay_restores_from_its_steps():
  replay = hand_replay(13)
  restored = replay_lib.FrameReplay(14, 2, (1, 1), 2, seed=7, n_step=N_STEP)
  restored.set_state(json.loads(json.dumps(replay.get_state())))
  for begin, arrays in replay.steps(6, 13):  # Two slot ranges: wrapped.
    restored.put_steps(begin, arrays)
  for got, want in zip(restored.sample(32), replay.sample(32)):
    np.testing.assert_array_equal(got, want)


def test_a_stream_too_small_for_n_steps_is_refused():
  with pytest.raises(ValueError, match='need at least 6'):
    replay_lib.FrameReplay(10, 2, (1, 1), 2, n_step=replay_lib.NStep(4, 0.9))
  with pytest.raises(ValueError, match='n_steps must be >= 1'):
    replay_lib.FrameReplay(10, 2, (1, 1), 2, n_step=replay_lib.NStep(0, 0.9))
