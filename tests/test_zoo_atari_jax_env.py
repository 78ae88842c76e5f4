"""Tests for zoo.environments.atari_jax_env: the mapping, and a recorded trace
against zoo.environments.vector_env's Python environment (real ROMs)."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo.environments import atari_jax_env
from zoo.environments import environment
from zoo.environments import vector_env

FIRST, MID, LAST = 0, 1, 2


def front_padded_stacks(num_envs, episode_step, fill_front=0):
  """[K, 4, 2, 3] stacks like AtariVectorEnv's: frame value = step + 1."""
  stacks = np.full((num_envs, 4, 2, 3), fill_front, np.uint8)
  for k, step in enumerate(episode_step):
    for slot in range(4):
      frame = step - 3 + slot  # Oldest first, newest in slot 3.
      if frame >= 0:
        stacks[k, slot] = frame + 1
  return stacks


@pytest.mark.parametrize('fill_front', [0, 99])
def test_to_dqn_zoo_stack_in_jax_is_numpys(fill_front):
  # Whatever fills the front (zeros from ale-py), both move it the same way.
  episode_step = np.array([0, 1, 2, 3, 7])
  stacks = front_padded_stacks(5, episode_step, fill_front)
  got = jax.jit(functools.partial(vector_env.to_dqn_zoo_stack, xp=jnp))(
      stacks, episode_step)
  np.testing.assert_array_equal(
      got, vector_env.to_dqn_zoo_stack(stacks, episode_step))
  assert got.dtype == jnp.uint8
  if not fill_front:
    np.testing.assert_array_equal(got[:, 0, 0], [[1, 0, 0, 0], [1, 2, 0, 0],
                                                 [1, 2, 3, 0], [1, 2, 3, 4],
                                                 [5, 6, 7, 8]])


def test_to_batched_timestep_in_jax_is_numpys_for_each_case():
  # Streams: FIRST (after a LAST), MID, life lost, game over, truncated,
  # life lost on the cut step.
  args = dict(
      stacks=front_padded_stacks(6, [0, 5, 5, 5, 5, 5]),
      reward=np.array([7, 3, -2, 1, 250, 4], np.int32),
      terminated=np.array([False, False, False, True, False, False]),
      truncated=np.array([False, False, False, False, True, True]),
      lives=np.array([5, 3, 2, 0, 3, 1], np.int32),
      previous_lives=np.array([0, 3, 3, 1, 3, 2], np.int32),
      first=np.array([True, False, False, False, False, False]),
      episode_step=np.array([0, 5, 5, 5, 5, 5], np.int32))
  got = jax.jit(functools.partial(vector_env.to_batched_timestep, xp=jnp))(
      **args)
  want = vector_env.to_batched_timestep(**args)
  for field in environment.BatchedTimeStep._fields:
    np.testing.assert_array_equal(getattr(got, field), getattr(want, field))
    assert getattr(got, field).dtype == getattr(want, field).dtype, field
  np.testing.assert_array_equal(got.step_type, [FIRST, MID, MID, LAST, LAST,
                                                LAST])
  np.testing.assert_array_equal(got.discount, [1, 1, 0, 0, 1, 0])


def test_bad_arguments_raise_before_loading_roms():
  with pytest.raises(ValueError, match='Did you mean'):
    atari_jax_env.make('breakuot', seed=0)
  with pytest.raises(ValueError, match='num_envs'):
    atari_jax_env.make('pong', seed=0, num_envs=0)
  with pytest.raises(ValueError, match='max_episode_frames'):
    atari_jax_env.make('pong', seed=0, max_episode_frames=-1)
  with pytest.raises(ValueError, match='Seeds'):
    atari_jax_env.make('pong', seed=-1)


@pytest.mark.end_to_end
def test_jitted_scan_replays_the_python_vector_environment_bit_for_bit():
  # Breakout with random actions loses lives and games quickly; a 600-frame
  # cap also cuts episodes (LAST with discount 1). A second reset (no reseed)
  # follows the first trace, as the Python environment's later resets.
  num_envs, num_steps, num_steps_after_reset = 4, 300, 20
  game, seed, cap = 'breakout', 3, 600
  rng = np.random.default_rng(1)
  actions = rng.integers(0, 4, size=(num_steps, num_envs)).astype(np.int32)
  actions_2 = rng.integers(0, 4, size=(num_steps_after_reset, num_envs)
                           ).astype(np.int32)

  with vector_env.VectorAtariEnvironment(
      game, seed=seed, num_envs=num_envs, max_episode_frames=cap) as python:
    want = [python.reset()] + [python.step(a) for a in actions]
    want_noops = python.noop_frames
    want += [python.reset()] + [python.step(a) for a in actions_2]

  with atari_jax_env.make(game, seed=seed, num_envs=num_envs,
                          max_episode_frames=cap) as env:
    assert env.num_actions == 4

    @jax.jit
    def trace(state, actions, actions_2):
      state, first = env.reset(state, env.seeds)
      state, steps = jax.lax.scan(env.step, state, actions)
      noops = state.streams.noop_frames
      state, first_2 = env.reset(state)
      state, steps_2 = jax.lax.scan(env.step, state, actions_2)
      stack = lambda *x: jnp.concatenate(
          [x[0][None], x[1], x[2][None], x[3]])
      return jax.tree.map(stack, first, steps, first_2, steps_2), noops

    got, got_noops = jax.device_get(trace(env.initial_state(), actions,
                                                actions_2))

  step_type = np.stack([t.step_type for t in want])
  discount = np.stack([t.discount for t in want])
  # The trace covers what it must compare.
  assert ((step_type == LAST) & (discount == 0)).sum() >= 3  # Game overs.
  assert ((step_type == LAST) & (discount == 1)).sum() >= 1  # Cut at the cap.
  assert ((step_type == MID) & (discount == 0)).sum() >= 10  # Lives lost.
  assert (step_type[1:num_steps + 1] == FIRST).sum() >= 3  # Auto-resets.
  for field in environment.BatchedTimeStep._fields:
    want_field = np.stack([getattr(t, field) for t in want])
    assert getattr(got, field).dtype == want_field.dtype, field
    np.testing.assert_array_equal(getattr(got, field), want_field,
                                  err_msg=field)
  np.testing.assert_array_equal(got_noops, want_noops)
  # The newest frame is where DQN Zoo's layout puts it.
  episode_step = np.zeros(num_envs, int)
  for t, frame in enumerate(got.frame):
    episode_step = np.where(step_type[t] == FIRST, 0, episode_step + 1)
    index = environment.newest_frame_index(episode_step)
    np.testing.assert_array_equal(
        frame, got.observation[t][np.arange(num_envs), :, :, index])
