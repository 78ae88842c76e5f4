"""The vectorized mode: K Atari streams on `ale_py.AtariVectorEnv`.

Configured to the DQN Zoo protocol; its front-padded stacks are moved to DQN
Zoo's layout. Where it differs from the reference mode: docs/environments.md.
"""

import os
from typing import Any, NamedTuple

import numpy as np

from zoo.environments import atari_data
from zoo.environments import environment


def to_dqn_zoo_stack(stacks, episode_step, xp=np):
  """Convert [K, S, H, W] front-padded stacks to [K, H, W, S] end-padded ones.

  `episode_step` [K]: 0 on FIRST; `xp`: numpy, or jax.numpy under jit.
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
  step_type = xp.where(first, environment.FIRST, xp.where(
      terminated | truncated, environment.LAST, environment.MID))
  life_lost = ~first & (xp.asarray(lives) < xp.asarray(previous_lives))
  discount = xp.where(terminated | life_lost, 0.0, 1.0)
  return environment.BatchedTimeStep(
      step_type=step_type.astype(np.int8),
      reward=xp.where(first, 0, reward).astype(np.float32),
      discount=discount.astype(np.float32),
      observation=to_dqn_zoo_stack(stacks, episode_step, xp),
  )


class StreamState(NamedTuple):
  """The [K] arrays that the mapping carries from step to step."""
  lives: Any = None         # Lives after each stream's last step.
  last: Any = None          # Bool: the stream's last step was LAST.
  episode_step: Any = None  # Agent steps since FIRST (0 on FIRST).
  noop_frames: Any = None   # No-op frames of the current episode.


def first_step(state: StreamState, stacks, info, xp=np):
  """Return (state, BatchedTimeStep) of a reset."""
  lives = xp.array(info['lives'])
  first = xp.ones(lives.shape, bool)
  zeros = xp.zeros(lives.shape, np.int32)
  state = state._replace(lives=lives, last=~first, episode_step=zeros,
                         noop_frames=xp.array(info['episode_frame_number']))
  return state, to_batched_timestep(stacks, zeros, ~first, ~first, lives,
                                    lives, first, zeros, xp)


def next_step(state: StreamState, stacks, reward, terminated, truncated, info,
              xp=np):
  """Return (state, BatchedTimeStep) after one step from `state`."""
  first = state.last
  episode_step = xp.where(first, 0, state.episode_step + 1)
  lives = xp.array(info['lives'])
  timestep = to_batched_timestep(stacks, reward, terminated, truncated, lives,
                                 state.lives, first, episode_step, xp)
  noop_frames = xp.where(first, info['episode_frame_number'],
                         state.noop_frames)
  return state._replace(
      lives=lives, last=timestep.step_type == environment.LAST,
      episode_step=episode_step, noop_frames=noop_frames), timestep


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
      atari_data.rom_id(game), num_envs, num_threads=num_threads,
      max_num_frames_per_episode=max_episode_frames,
      repeat_action_probability=0.0, full_action_space=False,
      autoreset_mode='NextStep', img_height=84, img_width=84, grayscale=True,
      stack_num=4, frameskip=4, maxpool=True, noop_max=30,
      episodic_life=False, life_loss_info=False, reward_clipping=False,
      use_fire_reset=False)


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
    self._env = vector_env if vector_env is not None else make_vector_env(
        game, num_envs, max_episode_frames, num_threads)
    self.num_envs = num_envs
    self.num_actions = int(self._env.single_action_space.n)
    self._seeds = environment.stream_seeds(seed, num_envs)
    self._seeded = False
    self._state = None

  @property
  def noop_frames(self) -> np.ndarray:
    """[K] no-op frames played at the start of each stream's episode."""
    return self._state.noop_frames.copy()

  def reset(self) -> environment.BatchedTimeStep:
    stacks, info = self._env.reset(seed=None if self._seeded else self._seeds)
    self._seeded = True
    self._state, timestep = first_step(StreamState(), stacks, info)
    return timestep

  def step(self, actions) -> environment.BatchedTimeStep:
    if self._state is None:
      raise RuntimeError('Call reset() before step().')
    actions = environment.check_actions(actions, self.num_envs,
                                        self.num_actions)
    self._state, timestep = next_step(
        self._state, *self._env.step(actions.astype(np.int32)))
    return timestep

  def close(self) -> None:
    if self._env is not None:
      self._env.close()
      self._env = None

