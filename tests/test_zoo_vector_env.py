"""Tests for zoo.environments.vector_env (pure mapping, a fake vector env, real ROMs)."""

import types

import numpy as np
import pytest

from zoo.environments import atari_env
from zoo.environments import environment
from zoo.environments import vector_env

FIRST, MID, LAST = 0, 1, 2


def front_padded_stacks(num_envs, episode_step):
  """[K, 4, 2, 3] stacks like AtariVectorEnv's: frame value = step + 1."""
  stacks = np.zeros((num_envs, 4, 2, 3), np.uint8)
  for k, step in enumerate(episode_step):
    for slot in range(4):
      frame = step - 3 + slot  # Oldest first, newest in slot 3.
      if frame >= 0:
        stacks[k, slot] = frame + 1
  return stacks


def test_to_dqn_zoo_stack_moves_padding_to_the_end():
  episode_step = np.array([0, 1, 2, 3, 7])
  out = vector_env.to_dqn_zoo_stack(front_padded_stacks(5, episode_step),
                                    episode_step)
  assert out.shape == (5, 2, 3, 4) and out.dtype == np.uint8
  np.testing.assert_array_equal(out[:, 0, 0], [[1, 0, 0, 0], [1, 2, 0, 0],
                                               [1, 2, 3, 0], [1, 2, 3, 4],
                                               [5, 6, 7, 8]])
  index = environment.newest_frame_index(episode_step)
  np.testing.assert_array_equal(out[np.arange(5), 0, 0, index],
                                episode_step + 1)


def test_to_batched_timestep_maps_each_case():
  # Streams: FIRST (after a LAST), MID, life lost, game over, truncated.
  timestep = vector_env.to_batched_timestep(
      stacks=front_padded_stacks(5, [0, 5, 5, 5, 5]),
      reward=np.array([7, 3, -2, 1, 250], np.int32),
      terminated=np.array([False, False, False, True, False]),
      truncated=np.array([False, False, False, False, True]),
      lives=np.array([5, 3, 2, 0, 3]),
      previous_lives=np.array([0, 3, 3, 1, 3]),
      first=np.array([True, False, False, False, False]),
      episode_step=np.array([0, 5, 5, 5, 5]))
  np.testing.assert_array_equal(timestep.step_type,
                                [FIRST, MID, MID, LAST, LAST])
  np.testing.assert_array_equal(timestep.reward, [0, 3, -2, 1, 250])
  np.testing.assert_array_equal(timestep.discount, [1, 1, 0, 0, 1])
  assert timestep.step_type.dtype == np.int8
  assert timestep.reward.dtype == np.float32
  assert timestep.discount.dtype == np.float32
  assert timestep.observation.shape == (5, 2, 3, 4)


class FakeVectorEnv:
  """AtariVectorEnv's reset/step with NEXT_STEP auto-reset, scripted."""

  def __init__(self, episode_steps):
    self.episode_steps = np.array(episode_steps)
    self.num_envs = len(episode_steps)
    self.single_action_space = types.SimpleNamespace(n=6)
    self.reset_seeds = []
    self.step_ = np.zeros(self.num_envs, int)
    self.needs_reset = np.zeros(self.num_envs, bool)
    self.actions = []

  def _out(self):
    return front_padded_stacks(self.num_envs, self.step_)

  def reset(self, seed=None):
    self.reset_seeds.append(seed)
    self.step_[:] = 0
    self.needs_reset[:] = False
    return self._out(), {'lives': np.full(self.num_envs, 3),
                         'episode_frame_number': np.full(self.num_envs, 9)}

  def step(self, actions):
    assert actions.dtype == np.int32
    self.actions.append(actions.copy())
    reward = np.where(self.needs_reset, 0, 10)
    self.step_ = np.where(self.needs_reset, 0, self.step_ + 1)
    terminated = ~self.needs_reset & (self.step_ >= self.episode_steps)
    self.needs_reset = terminated.copy()
    info = {'lives': np.where(terminated, 0, 3),
            'episode_frame_number': 4 * self.step_ + 9}
    return self._out(), reward, terminated, np.zeros_like(terminated), info

  def close(self):
    pass


def test_fake_streams_auto_reset_independently():
  fake = FakeVectorEnv(episode_steps=[2, 3])
  env = vector_env.VectorAtariEnvironment('pong', 11, num_envs=2,
                                          vector_env=fake)
  timestep = env.reset()
  np.testing.assert_array_equal(timestep.step_type, [FIRST, FIRST])
  np.testing.assert_array_equal(timestep.observation[:, 0, 0],
                                [[1, 0, 0, 0]] * 2)
  step_types, rewards, discounts = [], [], []
  for _ in range(6):
    timestep = env.step(np.array([1, 5]))
    step_types.append(timestep.step_type.tolist())
    rewards.append(timestep.reward.tolist())
    discounts.append(timestep.discount.tolist())
  assert step_types == [[MID, MID], [LAST, MID], [FIRST, LAST],
                        [MID, FIRST], [LAST, MID], [FIRST, MID]]
  assert rewards[2] == [0, 10] and rewards[3] == [10, 0]
  assert discounts[1] == [0, 1] and discounts[2] == [1, 0]
  np.testing.assert_array_equal(env.noop_frames, [9, 9])
  # The stream's stack restarts with DQN Zoo's padding after an auto-reset.
  np.testing.assert_array_equal(timestep.observation[0, 0, 0], [1, 0, 0, 0])
  # Seeds are given once (the ROM reloads on a seeded reset), per stream.
  env.reset()
  np.testing.assert_array_equal(fake.reset_seeds[0],
                                environment.stream_seeds(11, 2))
  assert fake.reset_seeds[1] is None


def test_step_checks_actions():
  env = vector_env.VectorAtariEnvironment(
      'pong', 0, num_envs=2, vector_env=FakeVectorEnv([5, 5]))
  with pytest.raises(RuntimeError, match='reset'):
    env.step(np.array([0, 0]))
  env.reset()
  with pytest.raises(ValueError, match='shape'):
    env.step(np.array([0, 0, 0]))
  with pytest.raises(ValueError, match=r'\[0, 6\)'):
    env.step(np.array([-1, 0]))


def test_real_pong_shapes_cap_and_auto_reset():
  env = atari_env.make_atari_environment('pong', 3, num_envs=2, mode='vector',
                                         max_episode_frames=200)
  first = env.reset()
  assert env.num_actions == 6
  assert first.observation.shape == (2, 84, 84, 4)
  assert first.observation.dtype == np.uint8
  assert (first.observation[..., 1:] == 0).all()
  assert (first.observation[..., 0] > 0).any()
  rng = np.random.default_rng(0)
  timesteps = [env.step(rng.integers(env.num_actions, size=2))
               for _ in range(52)]
  env.close()
  step_types = np.array([t.step_type for t in timesteps])
  np.testing.assert_array_equal(step_types[:49], MID)
  np.testing.assert_array_equal(step_types[49], [LAST, LAST])  # 200 frames.
  np.testing.assert_array_equal(timesteps[49].discount, [1, 1])
  np.testing.assert_array_equal(step_types[50], [FIRST, FIRST])
  np.testing.assert_array_equal(timesteps[50].reward, [0, 0])
  assert (timesteps[50].observation[..., 1:] == 0).all()
  assert (timesteps[51].observation[..., 2:] == 0).all()
  assert (timesteps[51].observation[..., 1] > 0).any()


def test_real_breakout_life_loss_zeroes_discount_mid_episode():
  env = atari_env.make_atari_environment('breakout', 3, num_envs=2,
                                         mode='vector')
  env.reset()
  rng = np.random.default_rng(0)
  timesteps = [env.step(rng.integers(env.num_actions, size=2))
               for _ in range(80)]
  env.close()
  step_types = np.array([t.step_type for t in timesteps])
  discounts = np.array([t.discount for t in timesteps])
  mid_discounts = set(discounts[step_types == MID].tolist())
  assert mid_discounts == {0.0, 1.0}


def test_real_noop_counts_are_0_to_29():
  env = vector_env.VectorAtariEnvironment('pong', 0, num_envs=8)
  counts = []
  for _ in range(12):
    env.reset()
    counts.extend(env.noop_frames.tolist())
  env.close()
  assert 0 <= min(counts) <= 2 and 27 <= max(counts) <= 29


def test_real_frames_match_reference_within_few_grey_levels():
  """Same emulator state in both modes: only the pixel pipeline differs."""
  game = 'seaquest'
  vector = vector_env.VectorAtariEnvironment(game, 5, num_envs=1)
  first = vector.reset()
  noops = int(vector.noop_frames[0])
  reference = atari_env.AtariEnvironment(game, 5, min_noop_frames=noops,
                                         max_noop_frames=noops)
  diffs = [np.abs(first.observation[0, ..., 0].astype(int)
                  - reference.reset().observation[..., 0]).mean()]
  rng = np.random.default_rng(0)
  for _ in range(60):
    action = rng.integers(vector.num_actions)
    v = vector.step(np.array([action])).observation[0, ..., -1]
    r = reference.step(action).observation[..., -1]
    diffs.append(np.abs(v.astype(int) - r).mean())
  vector.close()
  # Measured ~1.6 grey levels (palette grayscale, area resize); a wrong
  # configuration (colour, another game state, no max-pool) is far off.
  assert 0.0 < np.mean(diffs) < 3.0
