"""Tests for zoo.replay.atari_device_replay: fed a scripted stream inside a
lax.scan, it holds what zoo.replay.frame_replay.FrameReplay holds, gives the
same transitions and stacks for the same indices, and samples uniformly over
the valid ones."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from tests import test_zoo_frame_replay
from tests.test_zoo_frame_replay import FakeStackingEnv, H, S, W
from tests.test_zoo_frame_replay import valid_indices
from zoo.environments import environment
from zoo.replay import atari_device_replay as replay_lib
from zoo.replay import device_replay
from zoo.replay import frame_replay

_CAPACITY = 40  # Per stream.
_MAX_ABS_REWARD = 1.0


def _script(num_streams, num_steps, seed=0):
  """Return a scripted stream: timesteps [T, K, ...] and actions [T, K]."""
  env = FakeStackingEnv(num_streams, 'trailing', seed=seed + 1)
  rng = np.random.default_rng(seed)
  steps = [env.step() for _ in range(num_steps)]
  step_type, observation, reward, discount = (np.stack(x) for x in zip(*steps))
  reward = reward * 3  # Some beyond ±1, to be clipped.
  actions = rng.integers(0, 5, size=(num_steps, num_streams)).astype(np.int32)
  timesteps = environment.BatchedTimeStep(step_type, reward, discount,
                                          observation)
  return timesteps, actions


@jax.jit
def _store_all(replay, episode_step, timesteps, actions):
  def body(carry, step):
    timestep, action = step
    return replay_lib.store(*carry, timestep, action, _MAX_ABS_REWARD), None
  return jax.lax.scan(body, (replay, episode_step), (timesteps, actions))[0]


def _both(num_streams, num_steps, seed=0):
  """Return (host FrameReplay, device arrays, device episode_step) fed alike."""
  timesteps, actions = _script(num_streams, num_steps, seed)
  host = frame_replay.FrameReplay(_CAPACITY * num_streams, num_streams, (H, W),
                                  S, seed=seed)
  for t in range(num_steps):
    # FrameReplay takes rewards already clipped (the agent clips).
    host.add(timesteps.step_type[t], timesteps.observation[t], actions[t],
             np.clip(timesteps.reward[t], -_MAX_ABS_REWARD, _MAX_ABS_REWARD),
             timesteps.discount[t])
  device, episode_step = _store_all(
      replay_lib.empty(num_streams, _CAPACITY, (H, W), S),
      jnp.zeros(num_streams, jnp.int32), timesteps, actions)
  return host, device, episode_step


@pytest.mark.parametrize('num_streams', [1, 3])
def test_holds_the_host_replays_steps(num_streams):
  # Two and a half turns of each stream's circular region.
  host, device, episode_step = _both(num_streams, 2 * _CAPACITY + 17)
  for name, want in host._arrays().items():  # pylint: disable=protected-access
    got = np.asarray(getattr(device, name))
    assert got.dtype == want.dtype, name
    np.testing.assert_array_equal(got, want, err_msg=name)
  state = host.get_state()
  np.testing.assert_array_equal(device.num_added, state['num_added'])
  np.testing.assert_array_equal(episode_step, state['episode_step'])


@pytest.mark.parametrize('stacks_last', [True, False])
def test_same_transitions_and_stacks_for_the_same_indices(stacks_last):
  host, device, _ = _both(3, 2 * _CAPACITY + 17, seed=2)
  stream, logical = valid_indices(host)
  want = host.gather(stream, logical, stacks_last=stacks_last)
  got = jax.jit(replay_lib.gather, static_argnums=(3, 4))(
      device, jnp.asarray(stream, jnp.int32), jnp.asarray(logical, jnp.int32),
      S, stacks_last)
  for name, w, g in zip(frame_replay.Transitions._fields, want, got):
    assert g.dtype == w.dtype and g.shape == w.shape, name
    np.testing.assert_array_equal(g, w, err_msg=name)
  # The comparison covers padded stacks at episode starts.
  frames_axis = (1, 2) if stacks_last else (2, 3)
  assert (np.asarray(got.s_tm1) == 0).all(axis=frames_axis).any()


def test_the_environments_newest_frame_is_the_stacks():
  timesteps, actions = _script(2, 30, seed=4)
  replay = replay_lib.empty(2, _CAPACITY, (H, W), S)
  from_stacks, _ = _store_all(replay, jnp.zeros(2, jnp.int32), timesteps,
                              actions)
  episode_step = np.zeros(2, int)
  frames = []
  for step_type, observation in zip(timesteps.step_type,
                                    timesteps.observation):
    episode_step = np.where(step_type == 0, 0, episode_step + 1)
    index = environment.newest_frame_index(episode_step)
    frames.append(observation[np.arange(2), :, :, index])

  @jax.jit
  def store_frames(replay, timesteps, actions, frames):
    def body(carry, step):
      timestep, action, frame = step
      return replay_lib.store(*carry, timestep, action, _MAX_ABS_REWARD,
                              frame=frame), None
    return jax.lax.scan(body, (replay, jnp.zeros(2, jnp.int32)),
                        (timesteps, actions, frames))[0][0]

  from_frames = store_frames(replay, timesteps, actions, np.stack(frames))
  for got, want in zip(from_frames, from_stacks):
    np.testing.assert_array_equal(got, want)


def test_samples_only_valid_transitions_uniformly():
  host, device, _ = _both(3, 2 * _CAPACITY + 17, seed=5)
  stream, logical = valid_indices(host)
  valid = {pair: i for i, pair in enumerate(zip(stream.tolist(),
                                                logical.tolist()))}
  sample = jax.jit(replay_lib.sample, static_argnums=(2, 3, 4))
  counts = np.zeros(len(valid))
  key = jax.random.PRNGKey(0)
  for _ in range(20):
    new_key, transitions = sample(device, key, 512, S, True)
    assert not np.array_equal(new_key, key)
    key = new_key
    assert transitions.s_t.shape == (512, H, W, S)
    for pair in _indices_of(host, transitions, stream, logical):
      assert pair in valid, f'drew {pair}, not a valid held transition'
      counts[valid[pair]] += 1
  assert counts.min() > 0  # Every valid transition is drawn.
  _, p_value = stats.chisquare(counts)
  assert p_value > 1e-3, (p_value, counts.min(), counts.max())


def _indices_of(host, transitions, stream, logical):
  """Return the (stream, logical) pairs of the drawn transitions.

  A drawn transition is found by its s_t (the script's frames are unique per
  stream and step), then all its fields must be the host's at that index.
  """
  want = host.gather(stream, logical)
  index_of = {s_t.tobytes(): i for i, s_t in enumerate(want.s_t)}
  drawn = [index_of.get(s_t.tobytes(), -1)
           for s_t in np.asarray(transitions.s_t)]
  held = np.asarray(drawn) >= 0
  at = np.asarray(drawn)[held]
  for name, w, g in zip(frame_replay.Transitions._fields, want, transitions):
    np.testing.assert_array_equal(np.asarray(g)[held], w[at], err_msg=name)
  return [(int(stream[i]), int(logical[i])) if i >= 0 else ('not held', i)
          for i in drawn]


def test_nbytes_is_what_empty_allocates_and_1m_transitions_cost_7gb():
  arrays = replay_lib.empty(3, 10, (H, W), S)
  assert replay_lib.nbytes(3, 10, (H, W)) == sum(
      a.nbytes for a in jax.tree.leaves(arrays))
  assert replay_lib.nbytes(1, 1_000_000) == 1_000_000 * (84 * 84 + 16) + 4
  assert 7.0e9 < replay_lib.nbytes(32, 1_000_000 // 32) < 7.1e9


def test_a_stream_too_small_for_one_transition_is_refused():
  with pytest.raises(ValueError, match='at least 5'):
    replay_lib.empty(4, 4)
  with pytest.raises(ValueError, match='num_streams'):
    replay_lib.empty(0, 10)


@pytest.mark.parametrize('num_steps,hand', [
    (12, test_zoo_frame_replay.HAND_AFTER_12_STEPS),
    (13, test_zoo_frame_replay.HAND_AFTER_13_STEPS)])
def test_n_step_transitions_are_the_host_replays_and_the_hand_computed(
    num_steps, hand):
  n_step = test_zoo_frame_replay.N_STEP
  step_type, observation, actions, reward, discount = (
      np.stack(x) for x in zip(*test_zoo_frame_replay.hand_steps(num_steps)))
  device = replay_lib.empty(2, 7, (1, 1), 2, n_steps=n_step.n)
  episode_step = jnp.zeros(2, jnp.int32)
  store = jax.jit(replay_lib.store, static_argnums=4)
  for t in range(num_steps):  # Rewards up to 32: none clipped.
    device, episode_step = store(
        device, episode_step, environment.BatchedTimeStep(
            step_type[t], reward[t], discount[t], observation[t]),
        actions[t], 100.0)
  host = test_zoo_frame_replay.hand_replay(num_steps)
  key, stream, logical = device_replay.sample_indices(
      device, jax.random.PRNGKey(1), 256, 2, n_step.n)
  assert set(zip(np.asarray(stream).tolist(),
                 np.asarray(logical).tolist())) == set(hand)
  key_b, got = jax.jit(functools.partial(
      replay_lib.sample, batch_size=256, num_stacked=2, n_step=n_step))(
          device, jax.random.PRNGKey(1))
  np.testing.assert_array_equal(key, key_b)
  want = host.gather(np.asarray(stream), np.asarray(logical))
  for name, w, g in zip(frame_replay.Transitions._fields, want, got):
    assert g.dtype == w.dtype and g.shape == w.shape, name
    np.testing.assert_array_equal(g, w, err_msg=name)
  drawn = test_zoo_frame_replay.as_hand_values(jax.device_get(got))
  pairs = zip(np.asarray(stream).tolist(), np.asarray(logical).tolist())
  assert [hand[pair] for pair in pairs] == drawn


def test_the_jitted_loops_replay_holds_n_steps_per_stream():
  replay = replay_lib.jax_replay(frame_replay.NStep(3, 0.5))
  with pytest.raises(ValueError, match='over 3 step.* at least 7'):
    replay.empty(2, 6)
  assert replay.empty(2, 7).frames.shape == (2, 7, 84, 84)
