"""Tests for zoo.replay.device_replay: the same valid transitions as the host replay,
drawn uniformly, and bit-identical stacks for the same indices."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from tests import test_zoo_frame_replay
from tests.test_zoo_frame_replay import FakeStackingEnv, H, S, W, _fill
from tests.test_zoo_frame_replay import valid_indices
from zoo.replay import device_replay
from zoo.replay import frame_replay as replay_lib

_gather = jax.jit(device_replay.gather, static_argnums=3)
_sample_indices = jax.jit(device_replay.sample_indices, static_argnums=(2, 3))


def _filled(num_streams, num_steps, stream_capacity=40, seed=0):
  replay = device_replay.DeviceFrameReplay(
      stream_capacity * num_streams, num_streams, (H, W), S, seed=seed)
  _fill(replay, FakeStackingEnv(num_streams, 'trailing', seed=seed + 1),
        num_steps)
  return replay


def _assert_device_mirrors_host(replay):
  host = replay._arrays()  # pylint: disable=protected-access
  device = replay.device_arrays
  for name in ('frames', 'actions', 'rewards', 'discounts', 'episode_steps'):
    got = np.asarray(getattr(device, name))
    assert got.dtype == host[name].dtype, name
    np.testing.assert_array_equal(got, host[name], err_msg=name)
  np.testing.assert_array_equal(device.num_added,
                                replay.get_state()['num_added'])


@pytest.mark.parametrize('num_streams', [1, 3])
def test_stacks_are_bit_identical_to_the_host_replay(num_streams):
  # Wrap around the circular regions twice: stacks cross the slot boundary.
  replay = _filled(num_streams, 2 * 40 + 17)
  _assert_device_mirrors_host(replay)
  stream, logical = valid_indices(replay)
  host = replay.gather(stream, logical, stacks_last=False)
  device = _gather(replay.device_arrays, jnp.asarray(stream, jnp.int32),
                   jnp.asarray(logical, jnp.int32), S)
  for name, want, got in zip(replay_lib.Transitions._fields, host, device):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    np.testing.assert_array_equal(got, want, err_msg=name)
  # Stacks near episode starts are padded (some zero frames).
  assert (np.asarray(device.s_tm1) == 0).all(axis=(2, 3)).any()


def test_samples_uniformly_over_the_host_replays_valid_transitions():
  replay = _filled(3, 2 * 40 + 17)
  stream, logical = valid_indices(replay)
  valid = {pair: i for i, pair in enumerate(zip(stream.tolist(),
                                                logical.tolist()))}
  # The host sampler draws from that same set.
  host_stream, host_logical = replay._draw_valid(2000)  # pylint: disable=protected-access
  assert set(zip(host_stream.tolist(), host_logical.tolist())) == set(valid)
  counts = np.zeros(len(valid))
  key = jax.random.PRNGKey(0)
  for _ in range(100):
    key, draws_stream, draws_logical = _sample_indices(
        replay.device_arrays, key, 256, S)
    for pair in zip(np.asarray(draws_stream).tolist(),
                    np.asarray(draws_logical).tolist()):
      assert pair in valid, f'drew {pair}, not a valid held transition'
      counts[valid[pair]] += 1
  assert counts.min() > 0  # Every valid transition is drawn.
  # Uniform: chi-square goodness of fit over the valid transitions.
  _, p_value = stats.chisquare(counts)
  assert p_value > 1e-3, (p_value, counts.min(), counts.max())


def test_sample_is_gather_of_sample_indices_with_the_same_key():
  replay = _filled(2, 50)
  key = jax.random.PRNGKey(3)
  key_a, transitions = jax.jit(replay.sampler, static_argnums=2)(
      replay.device_arrays, key, 16)
  key_b, stream, logical = _sample_indices(replay.device_arrays, key, 16, S)
  np.testing.assert_array_equal(key_a, key_b)
  assert not np.array_equal(key_a, key)
  expected = replay.gather(np.asarray(stream), np.asarray(logical),
                           stacks_last=False)
  assert transitions.s_t.shape == (16, S, H, W)
  for got, want in zip(transitions, expected):
    np.testing.assert_array_equal(got, want)


def test_add_writes_only_the_new_step_in_place():
  replay = _filled(2, 10)
  before = replay.device_arrays
  _fill(replay, FakeStackingEnv(2, 'trailing', seed=9), 1)
  # The previous buffers were donated to the write: updated in place.
  assert before.frames.is_deleted()
  _assert_device_mirrors_host(replay)


def test_a_restore_uploads_the_restored_host_replay():
  replay = _filled(3, 55)
  restored = device_replay.DeviceFrameReplay(120, 3, (H, W), S)
  # As run_loop restores a checkpoint: the counters, then the held steps.
  restored.set_state(replay.get_state())
  held_from = replay.num_steps - 120 // 3
  for first, arrays in replay.steps(held_from, replay.num_steps):
    restored.put_steps(first, arrays)
  _assert_device_mirrors_host(restored)
  key = jax.random.PRNGKey(1)
  a = jax.jit(replay.sampler, static_argnums=2)(replay.device_arrays, key, 8)
  b = jax.jit(restored.sampler, static_argnums=2)(restored.device_arrays, key,
                                                  8)
  for x, y in zip(jax.tree.leaves(a), jax.tree.leaves(b)):
    np.testing.assert_array_equal(x, y)


def test_frames_of_any_rank_unstacked():
  # MinAtar's layout: frames [10, 10, C], a stack of one.
  rng = np.random.default_rng(0)
  replay = device_replay.DeviceFrameReplay(40, 2, (10, 10, 3), 1)
  for t in range(15):
    observation = rng.integers(0, 2, (2, 10, 10, 3, 1)).astype(np.uint8)
    replay.add(np.full(2, 0 if t == 0 else 1, np.int8), observation,
               np.full(2, t), np.zeros(2, np.float32), np.ones(2, np.float32))
  _assert_device_mirrors_host(replay)
  stream, logical = valid_indices(replay)
  device = _gather(replay.device_arrays, jnp.asarray(stream, jnp.int32),
                   jnp.asarray(logical, jnp.int32), 1)
  host = replay.gather(stream, logical, stacks_last=False)
  assert device.s_t.shape == (len(stream), 1, 10, 10, 3)
  for got, want in zip(device, host):
    np.testing.assert_array_equal(got, want)


def test_nothing_to_sample_is_a_clear_error():
  replay = device_replay.DeviceFrameReplay(10, 1, (H, W), S)
  with pytest.raises(ValueError, match='empty replay'):
    replay.check_sampleable()
  replay.add(np.zeros(1, np.int8), np.zeros((1, H, W, S), np.uint8),
             np.zeros(1), np.zeros(1), np.ones(1))
  with pytest.raises(ValueError, match='no valid transition'):
    replay.check_sampleable()


_n_step_gather = jax.jit(functools.partial(
    device_replay.gather, num_stacked=2, n_step=test_zoo_frame_replay.N_STEP))


@pytest.mark.parametrize('num_steps,hand', [
    (12, test_zoo_frame_replay.HAND_AFTER_12_STEPS),
    (13, test_zoo_frame_replay.HAND_AFTER_13_STEPS)])
def test_n_step_transitions_are_the_host_replays_and_the_hand_computed(
    num_steps, hand):
  replay = test_zoo_frame_replay.hand_replay(
      num_steps, device_replay.DeviceFrameReplay)
  _assert_device_mirrors_host(replay)
  stream, logical = (np.array(x) for x in zip(*hand))
  device = _n_step_gather(replay.device_arrays,
                          jnp.asarray(stream, jnp.int32),
                          jnp.asarray(logical, jnp.int32))
  host = replay.gather(stream, logical, stacks_last=False)
  for name, want, got in zip(replay_lib.Transitions._fields, host, device):
    assert got.dtype == want.dtype and got.shape == want.shape, name
    np.testing.assert_array_equal(got, want, err_msg=name)
  assert dict(zip(hand, test_zoo_frame_replay.as_hand_values(
      jax.device_get(device)))) == hand
  # The device sampler draws exactly the valid ones.
  _, drawn_stream, drawn_logical = jax.jit(
      device_replay.sample_indices, static_argnums=(2, 3, 4))(
          replay.device_arrays, jax.random.PRNGKey(0), 256, 2, 3)
  assert set(zip(np.asarray(drawn_stream).tolist(),
                 np.asarray(drawn_logical).tolist())) == set(hand)


def test_n_step_sampler_agrees_with_the_host_replay_bit_for_bit():
  n_step = replay_lib.NStep(n=4, discount=0.99)  # Rounded powers of γ.
  replay = device_replay.DeviceFrameReplay(120, 3, (H, W), S, seed=2,
                                           n_step=n_step)
  _fill(replay, FakeStackingEnv(3, 'trailing', seed=3), 2 * 40 + 17)
  stream, logical = test_zoo_frame_replay.n_step_valid_indices(replay)
  key, draws_stream, draws_logical = jax.jit(
      device_replay.sample_indices, static_argnums=(2, 3, 4))(
          replay.device_arrays, jax.random.PRNGKey(5), 2000, S, n_step.n)
  assert set(zip(np.asarray(draws_stream).tolist(),
                 np.asarray(draws_logical).tolist())) == set(
                     zip(stream.tolist(), logical.tolist()))
  key_b, transitions = jax.jit(replay.sampler, static_argnums=2)(
      replay.device_arrays, jax.random.PRNGKey(5), 2000)
  np.testing.assert_array_equal(key, key_b)
  expected = replay.gather(np.asarray(draws_stream),
                           np.asarray(draws_logical), stacks_last=False)
  for name, got, want in zip(replay_lib.Transitions._fields, transitions,
                             expected):
    np.testing.assert_array_equal(got, want, err_msg=name)
  # Returns of several steps were drawn, not only one-step ones.
  assert np.isclose(np.asarray(transitions.discount_t), 0.99**3).any()
