"""Tests for zoo.environments.atari_env (fake ALE for the protocol, one real ROM)."""

import dm_env
import numpy as np
import pytest

from zoo.environments import atari_env
from zoo.environments import environment

FIRST, MID, LAST = (dm_env.StepType.FIRST, dm_env.StepType.MID,
                    dm_env.StepType.LAST)


class FakeAle:
  """The ALEInterface methods AtariEnvironment calls, scripted.

  Frame n (n = 0 after reset_game, +1 per act) shows a screen whose red
  channel is bright on odd frames and green on even frames, with intensity
  growing with n, so that pooling, luminance order and frame choice all show.
  """

  def __init__(self, game_over_frame=10_000, life_loss_frames=(),
               reward_per_frame=5.0, action_set=(0, 1, 3, 4)):
    self.game_over_frame = game_over_frame
    self.life_loss_frames = tuple(life_loss_frames)
    self.reward_per_frame = reward_per_frame
    self.action_set = list(action_set)
    self.frame = 0
    self.actions = []
    self.num_resets = 0

  @staticmethod
  def screen(frame):
    rgb = np.zeros((210, 160, 3), np.uint8)
    channel = 0 if frame % 2 else 1
    rgb[..., channel] = 20 + (frame * 3) % 200
    rgb[:105, :, 2] = 7  # A little structure for the resize.
    return rgb

  def getMinimalActionSet(self):  # pylint: disable=invalid-name
    return self.action_set

  def reset_game(self):
    self.frame = 0
    self.num_resets += 1

  def act(self, action):
    self.frame += 1
    self.actions.append(action)
    return self.reward_per_frame

  def lives(self):
    return 3 - sum(f <= self.frame for f in self.life_loss_frames)

  def game_over(self):
    return self.frame >= self.game_over_frame

  def getScreenRGB(self):  # pylint: disable=invalid-name
    return self.screen(self.frame)


def processed(frame):
  return atari_env.process_frame(FakeAle.screen(frame))


def pooled(frame_a, frame_b):
  return atari_env.process_frame(
      np.maximum(FakeAle.screen(frame_a), FakeAle.screen(frame_b)))


def make(seed=0, **kwargs):
  ale_kwargs = {k: kwargs.pop(k) for k in list(kwargs)
                if k in ('game_over_frame', 'life_loss_frames',
                         'reward_per_frame')}
  ale = FakeAle(**ale_kwargs)
  return atari_env.AtariEnvironment('pong', seed, ale=ale, **kwargs), ale


def test_luminance_truncates_like_dqn_zoo():
  rgb = np.array([[[200, 150, 0], [10, 20, 30], [0, 0, 255], [255, 0, 0]]],
                 np.uint8)
  # 147.85, 18.15, 29.07, 76.245: truncated, not rounded.
  np.testing.assert_array_equal(atari_env.rgb_to_luminance(rgb),
                                [[147, 18, 29, 76]])


def test_resize_keeps_constant_images_and_shape():
  frame = np.full((210, 160), 93, np.uint8)
  out = atari_env.resize_bilinear(frame, 84, 84)
  assert out.shape == (84, 84) and out.dtype == np.uint8
  assert (out == 93).all()


def test_first_observation_is_screen_after_noops_padded_at_end():
  env, ale = make(min_noop_frames=5, max_noop_frames=5)
  timestep = env.reset()
  assert timestep.step_type == FIRST
  assert ale.actions == [0] * 5  # No-ops are ALE action index 0, raw frames.
  assert timestep.observation.shape == (84, 84, 4)
  assert timestep.observation.dtype == np.uint8
  np.testing.assert_array_equal(timestep.observation[..., 0], processed(5))
  assert (timestep.observation[..., 1:] == 0).all()


def test_pools_rgb_of_last_two_frames_before_luminance():
  env, _ = make(min_noop_frames=1, max_noop_frames=1)
  env.reset()
  timestep = env.step(2)
  newest = timestep.observation[..., 1]
  np.testing.assert_array_equal(newest, pooled(4, 5))  # Frames 2..5 acted.
  max_of_luminances = np.maximum(processed(4), processed(5))
  assert not np.array_equal(newest, max_of_luminances)


def test_action_indexes_minimal_set_and_repeats_four_frames():
  env, ale = make(min_noop_frames=1, max_noop_frames=1)
  assert env.num_actions == 4
  env.reset()
  env.step(2)
  assert ale.actions == [0] + [3] * 4


def test_stack_holds_last_four_frames_oldest_first():
  env, _ = make(min_noop_frames=2, max_noop_frames=2)
  env.reset()
  observations = [env.step(1).observation for _ in range(5)]
  np.testing.assert_array_equal(observations[1][..., 3], 0)
  expected = [pooled(2 + 4 * i - 1, 2 + 4 * i) for i in range(2, 6)]
  np.testing.assert_array_equal(observations[-1],
                                np.stack(expected, axis=-1))
  # Every earlier frame moved one slot to the left.
  np.testing.assert_array_equal(observations[-1][..., :3],
                                observations[-2][..., 1:])


def test_reward_is_raw_sum_over_repeats():
  env, _ = make(reward_per_frame=5.0)
  first = env.reset()
  assert first.reward is None
  timestep = env.step(0)
  assert timestep.reward == 20.0  # Not clipped: the agent clips.
  assert timestep.discount == 1.0


def test_life_loss_zeroes_discount_and_episode_goes_on():
  env, _ = make(min_noop_frames=1, max_noop_frames=1, life_loss_frames=(7,))
  env.reset()
  assert env.step(0).discount == 1.0  # Frames 2..5.
  timestep = env.step(0)  # Frames 6..9 include the life loss at 7.
  assert timestep.step_type == MID and timestep.discount == 0.0
  timestep = env.step(0)
  assert timestep.step_type == MID and timestep.discount == 1.0


def test_life_loss_ends_the_episode_where_asked_and_the_game_goes_on():
  env, ale = make(min_noop_frames=1, max_noop_frames=1, life_loss_frames=(7,),
                  max_episode_frames=12, life_loss_ends_episode=True)
  env.reset()
  env.step(0)  # Frames 2..5.
  timestep = env.step(0)  # Frames 6, 7: the life lost at 7 stops the repeat.
  assert timestep.step_type == LAST and timestep.discount == 0.0
  assert ale.frame == 7
  ale.actions.clear()
  timestep = env.step(1)  # Ignored: the next episode starts, same game.
  assert timestep.step_type == FIRST and ale.num_resets == 1
  assert ale.actions == []  # No reset, no no-ops.
  np.testing.assert_array_equal(timestep.observation[..., 0], processed(7))
  assert (timestep.observation[..., 1:] == 0).all()  # A fresh stack.
  timestep = env.step(0)  # Frames 8..11 of the game (6 counted, cap 12).
  assert timestep.step_type == MID and timestep.discount == 1.0
  timestep = env.step(0)  # The cap counts the game's frames: 12 is LAST.
  assert timestep.step_type == LAST and timestep.discount == 1.0
  assert ale.frame == 13
  env.step(0)
  assert ale.num_resets == 2  # The capped game is reset.


def test_game_over_on_a_life_loss_resets_the_game():
  env, ale = make(min_noop_frames=1, max_noop_frames=1, life_loss_frames=(9,),
                  game_over_frame=9, life_loss_ends_episode=True)
  env.reset()
  env.step(0)
  assert env.step(0).step_type == LAST
  assert env.step(0).step_type == FIRST and ale.num_resets == 2


def test_game_over_is_last_with_zero_discount_then_auto_reset():
  env, ale = make(min_noop_frames=1, max_noop_frames=1, game_over_frame=9)
  env.reset()
  env.step(0)
  timestep = env.step(1)  # Frames 6..9: game over on the 4th frame.
  assert timestep.step_type == LAST and timestep.discount == 0.0
  np.testing.assert_array_equal(timestep.observation[..., 2], pooled(8, 9))
  ale.actions.clear()
  timestep = env.step(3)  # Ignored: the episode restarts.
  assert timestep.step_type == FIRST and ale.num_resets == 2
  assert ale.actions == [0]  # Only the no-op.
  assert (timestep.observation[..., 1:] == 0).all()


@pytest.mark.parametrize('end_offset,expected', [(1, 'black'), (2, 'black'),
                                                 (3, 'third')])
def test_repeat_cut_by_game_over_pools_dqn_zoo_padding(end_offset, expected):
  env, _ = make(min_noop_frames=1, max_noop_frames=1,
                game_over_frame=1 + end_offset)
  env.reset()
  timestep = env.step(0)
  assert timestep.step_type == LAST
  newest = timestep.observation[..., 1]
  if expected == 'black':
    assert (newest == 0).all()
  else:
    np.testing.assert_array_equal(newest, processed(1 + end_offset))


def test_episode_cut_at_frame_cap_with_discount_one():
  env, ale = make(min_noop_frames=3, max_noop_frames=3, max_episode_frames=40)
  env.reset()
  timesteps = [env.step(0) for _ in range(10)]
  assert [t.step_type for t in timesteps] == [MID] * 9 + [LAST]
  assert timesteps[-1].discount == 1.0
  assert ale.frame == 3 + 40  # The no-ops do not count.
  assert env.step(0).step_type == FIRST


def test_frame_cap_mid_repeat_cuts_the_repeat():
  env, ale = make(min_noop_frames=1, max_noop_frames=1, max_episode_frames=6)
  env.reset()
  assert env.step(0).step_type == MID
  timestep = env.step(0)
  assert timestep.step_type == LAST and ale.frame == 7
  assert (timestep.observation[..., 2] == 0).all()  # DQN Zoo's padding.


def test_noop_counts_are_uniform_in_1_to_30_and_seeded():
  def counts(seed):
    env, _ = make(seed)
    out = []
    for _ in range(400):
      env.reset()
      out.append(env.last_num_noop_frames)
    return out

  a = counts(3)
  assert min(a) == 1 and max(a) == 30
  assert a == counts(3)
  assert a != counts(4)


def test_rejects_bad_arguments():
  with pytest.raises(ValueError, match='Unknown Atari game'):
    atari_env.AtariEnvironment('pacman', 0, ale=FakeAle())
  with pytest.raises(ValueError, match='min_noop_frames'):
    atari_env.AtariEnvironment('pong', 0, min_noop_frames=5,
                               max_noop_frames=2, ale=FakeAle())
  with pytest.raises(ValueError, match="'reference' or 'vector'"):
    atari_env.make_atari_environment('pong', 0, mode='fast')


class TestReferenceBatchedEnvironment:

  def make_batched(self, game_over_frames=(41, 61)):
    fakes = []

    def ale_factory(unused_game, unused_seed):
      fakes.append(FakeAle(game_over_frame=game_over_frames[len(fakes)]))
      return fakes[-1]

    env = atari_env.make_atari_environment(
        'pong', 0, num_envs=len(game_over_frames), ale_factory=ale_factory)
    return env, fakes

  def test_reset_gives_all_first(self):
    env, _ = self.make_batched()
    timestep = env.reset()
    assert isinstance(timestep, environment.BatchedTimeStep)
    np.testing.assert_array_equal(timestep.step_type, [0, 0])
    assert timestep.step_type.dtype == np.int8
    assert timestep.reward.dtype == np.float32
    assert timestep.discount.dtype == np.float32
    np.testing.assert_array_equal(timestep.reward, [0, 0])
    np.testing.assert_array_equal(timestep.discount, [1, 1])
    assert timestep.observation.shape == (2, 84, 84, 4)
    assert env.num_envs == 2 and env.num_actions == 4

  def test_streams_auto_reset_independently(self):
    env, fakes = self.make_batched(game_over_frames=(31, 51))
    env.reset()
    noops = [e.last_num_noop_frames for e in env.environments]
    step_types = []
    for _ in range(20):
      timestep = env.step(np.array([1, 2]))
      step_types.append(timestep.step_type.tolist())
      for k in range(2):
        if timestep.step_type[k] == FIRST:
          assert timestep.reward[k] == 0 and timestep.discount[k] == 1
        if timestep.step_type[k] == LAST:
          assert timestep.discount[k] == 0
    step_types = np.array(step_types)
    for k, end in enumerate((31, 51)):
      steps_per_episode = -(-(end - noops[k]) // 4)  # Ceil.
      lasts = np.flatnonzero(step_types[:, k] == LAST)
      firsts = np.flatnonzero(step_types[:, k] == FIRST)
      assert lasts[0] == steps_per_episode - 1
      np.testing.assert_array_equal(firsts[:len(lasts)], lasts[:len(firsts)]
                                    + 1)
    assert fakes[0].num_resets >= 2

  def test_step_checks_actions(self):
    env, _ = self.make_batched()
    with pytest.raises(RuntimeError, match='reset'):
      env.step(np.array([0, 0]))
    env.reset()
    with pytest.raises(ValueError, match='shape'):
      env.step(np.array([0]))
    with pytest.raises(ValueError, match=r'\[0, 4\)'):
      env.step(np.array([0, 4]))


def test_real_pong_shapes_actions_and_determinism():
  def run(seed):
    env = atari_env.make_atari_environment('pong', seed)
    first = env.reset()
    rng = np.random.default_rng(0)
    rewards, observations = [], [first.observation]
    for _ in range(300):
      timestep = env.step(rng.integers(env.num_actions, size=1))
      rewards.append(timestep.reward[0])
      observations.append(timestep.observation)
    env.close()
    return env, np.concatenate(observations), np.array(rewards)

  env, observations, rewards = run(1)
  assert env.num_actions == 6
  assert observations.shape == (301, 84, 84, 4)
  assert observations.dtype == np.uint8
  assert set(np.unique(rewards)) <= {-1.0, 0.0, 1.0}
  assert 30 < observations[-1].mean() < 200
  _, observations_again, rewards_again = run(1)
  np.testing.assert_array_equal(observations, observations_again)
  np.testing.assert_array_equal(rewards, rewards_again)
