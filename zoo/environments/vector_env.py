"""The vectorized mode: K Atari streams on `ale_py.AtariVectorEnv`.

Configured to the DQN Zoo protocol; its front-padded stacks are moved to DQN
Zoo's layout. Where it differs from the reference mode: docs/environments.md.
"""

import os
from typing import Any, Mapping

import numpy as np

from zoo.environments import atari_data
from zoo.environments import environment


def to_dqn_zoo_stack(stacks, episode_step, xp=np):
  """Convert [K, S, H, W] front-padded stacks to [K, H, W, S] end-padded ones.

  `episode_step` [K]: agent steps since each stream's FIRST (0 on FIRST);
  `xp`: numpy, or jax.numpy under jit.
  """
  num_stacked = stacks.shape[1]
  shift = xp.maximum(num_stacked - 1 - xp.asarray(episode_step), 0)
  source = (xp.arange(num_stacked)[None, :] + shift[:, None]) % num_stacked
  return xp.take_along_axis(xp.moveaxis(stacks, 1, -1),
                            source[:, None, None, :], axis=-1)


def to_batched_timestep(stacks, reward, terminated, truncated, lives,
                        previous_lives, first, episode_step, xp=np
                        ) -> environment.BatchedTimeStep:
  """Map one AtariVectorEnv step (NEXT_STEP auto-reset) to a BatchedTimeStep.

  All [K]: `lives` after this step, `previous_lives` after the previous one,
  `first`: the previous step was LAST; `episode_step`: 0 where `first`.
  """
  first = xp.asarray(first, bool)
  terminated = xp.asarray(terminated, bool) & ~first
  truncated = xp.asarray(truncated, bool) & ~first
  last = terminated | truncated
  step_type = xp.where(first, environment.FIRST,
                       xp.where(last, environment.LAST, environment.MID))
  life_lost = ~first & (xp.asarray(lives) < xp.asarray(previous_lives))
  discount = xp.where(terminated | life_lost, 0.0, 1.0)
  return environment.BatchedTimeStep(
      step_type=step_type.astype(np.int8),
      reward=xp.where(first, 0, reward).astype(np.float32),
      discount=discount.astype(np.float32),
      observation=to_dqn_zoo_stack(stacks, episode_step, xp),
  )


def check_arguments(game: str, num_envs: int, max_episode_frames: int) -> None:
  """Raise ValueError for an unknown game, K < 1 or a negative frame cap."""
  atari_data.check_game(game)
  if num_envs < 1:
    raise ValueError(f'num_envs must be >= 1, got {num_envs}.')
  if max_episode_frames < 0:
    raise ValueError(f'max_episode_frames must be >= 0 (0: no cap), got '
                     f'{max_episode_frames}.')


def make_vector_env(game: str, num_envs: int, max_episode_frames: int,
                    num_threads: int):
  """Return an AtariVectorEnv on DQN Zoo's protocol (0 threads: K or CPUs)."""
  import ale_py  # pylint: disable=g-import-not-at-top
  if num_threads <= 0:
    num_threads = min(num_envs, os.cpu_count() or 1)
  return ale_py.AtariVectorEnv(
      atari_data.rom_id(game),
      num_envs,
      num_threads=num_threads,
      max_num_frames_per_episode=max_episode_frames,
      repeat_action_probability=0.0,
      full_action_space=False,
      autoreset_mode='NextStep',
      img_height=84,
      img_width=84,
      grayscale=True,
      stack_num=4,
      frameskip=4,
      maxpool=True,
      noop_max=30,
      episodic_life=False,
      life_loss_info=False,
      reward_clipping=False,
      use_fire_reset=False,
  )


class VectorAtariEnvironment(environment.BatchedEnvironment):
  """K Atari streams on ale_py.AtariVectorEnv's threads, DQN Zoo protocol."""

  def __init__(self, game: str, seed: int, num_envs: int = 1,
               max_episode_frames: int = 108_000, num_threads: int = 0,
               vector_env=None):
    """Create K streams; `seed` seeds them at the first reset.

    max_episode_frames: frame cap per episode, no-ops excluded (0: none);
    num_threads: 0: min(K, CPU count); vector_env: a fake, for tests.
    """
    check_arguments(game, num_envs, max_episode_frames)
    if vector_env is None:
      vector_env = make_vector_env(game, num_envs, max_episode_frames,
                                   num_threads)
    self._env = vector_env
    self.num_envs = num_envs
    self.num_actions = int(self._env.single_action_space.n)
    self._seeds = environment.stream_seeds(seed, num_envs)
    self._seeded = False
    self._lives = None
    self._last = None
    self._episode_step = None
    self._noop_frames = None

  @property
  def noop_frames(self) -> np.ndarray:
    """[K] no-op frames played at the start of each stream's episode."""
    return self._noop_frames.copy()

  def _start(self, info: Mapping[str, Any]) -> None:
    self._lives = np.asarray(info['lives']).copy()
    self._last = np.zeros(self.num_envs, bool)
    self._episode_step = np.zeros(self.num_envs, np.int64)
    self._noop_frames = np.asarray(info['episode_frame_number']).copy()

  def reset(self) -> environment.BatchedTimeStep:
    seed = None if self._seeded else self._seeds
    stacks, info = self._env.reset(seed=seed)
    self._seeded = True
    self._start(info)
    zeros = np.zeros(self.num_envs)
    return to_batched_timestep(
        stacks, zeros, zeros, zeros, self._lives, self._lives,
        first=np.ones(self.num_envs, bool), episode_step=self._episode_step)

  def step(self, actions) -> environment.BatchedTimeStep:
    if self._last is None:
      raise RuntimeError('Call reset() before step().')
    actions = environment.check_actions(actions, self.num_envs,
                                        self.num_actions)
    stacks, reward, terminated, truncated, info = self._env.step(
        actions.astype(np.int32))
    first = self._last
    self._episode_step = np.where(first, 0, self._episode_step + 1)
    lives = np.asarray(info['lives'])
    timestep = to_batched_timestep(stacks, reward, terminated, truncated,
                                   lives, self._lives, first,
                                   self._episode_step)
    self._lives = lives.copy()
    self._last = timestep.step_type == environment.LAST
    self._noop_frames = np.where(first, info['episode_frame_number'],
                                 self._noop_frames)
    return timestep

  def close(self) -> None:
    if self._env is not None:
      self._env.close()
      self._env = None

