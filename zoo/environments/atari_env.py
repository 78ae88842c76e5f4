"""One Atari game under the DQN Zoo protocol, and the reference batched mode.

`AtariEnvironment` folds in DQN Zoo's gym_atari, no-op wrapper, processors
and episode cap; its pixels are DQN Zoo's, bit for bit (docs/environments.md).
"""

from typing import Callable, Optional, Sequence

import dm_env
from dm_env import specs
import numpy as np
from PIL import Image

from zoo.environments import atari_data
from zoo.environments import environment
from zoo.environments import vector_env

_LUMA = np.array([0.299, 0.587, 1 - (0.299 + 0.587)])


def rgb_to_luminance(rgb: np.ndarray) -> np.ndarray:
  """Convert [H, W, 3] uint8 RGB to [H, W] uint8 luminance (truncated)."""
  return np.tensordot(rgb, _LUMA, (-1, 0)).astype(np.uint8)


def resize_bilinear(frame: np.ndarray, height: int, width: int) -> np.ndarray:
  """Resize [H, W] uint8 with Pillow's (antialiased) bilinear filter."""
  image = Image.fromarray(frame).resize((width, height),
                                        Image.Resampling.BILINEAR)
  return np.asarray(image, dtype=np.uint8)


def process_frame(pooled_rgb: np.ndarray, height: int = 84,
                  width: int = 84) -> np.ndarray:
  """Turn a max-pooled RGB screen into one [height, width] uint8 frame."""
  return resize_bilinear(rgb_to_luminance(pooled_rgb), height, width)


def make_ale(game: str, seed: int):
  """Return an ALEInterface with the game's ROM loaded, DQN Zoo's settings."""
  import ale_py  # pylint: disable=g-import-not-at-top
  from ale_py import roms  # pylint: disable=g-import-not-at-top
  ale_py.ALEInterface.setLoggerMode(ale_py.LoggerMode.Error)
  ale = ale_py.ALEInterface()
  ale.setInt('random_seed', int(seed))
  ale.setFloat('repeat_action_probability', 0.0)
  ale.setInt('max_num_frames_per_episode', 0)  # The env cuts episodes.
  ale.loadROM(roms.get_rom_path(atari_data.rom_id(game)))
  return ale


class AtariEnvironment(dm_env.Environment):
  """One Atari game with DQN Zoo's preprocessing; auto-resets after LAST."""

  def __init__(self, game: str, seed: int, max_episode_frames: int = 108_000,
               num_action_repeats: int = 4, num_pooled_frames: int = 2,
               num_stacked_frames: int = 4, min_noop_frames: int = 1,
               max_noop_frames: int = 30, height: int = 84, width: int = 84,
               life_loss_ends_episode: bool = False, ale=None):
    """Create the environment; `seed` seeds ALE and the no-op draws.

    max_episode_frames: frame cap per game, no-ops excluded (0: none);
    life_loss_ends_episode: a life lost is LAST (the repeat stops there, as
    Dopamine's terminal_on_life_loss) and the next episode goes on with the
    same game: no reset, no no-ops, a fresh frame stack;
    num_pooled_frames: the repeat's last frames max-pooled; max_noop_frames:
    inclusive; ale: a loaded ALEInterface-like object (tests); None: made.
    """
    atari_data.check_game(game)
    if not 1 <= num_pooled_frames <= num_action_repeats:
      raise ValueError('Need 1 <= num_pooled_frames <= num_action_repeats, got '
                       f'{num_pooled_frames} and {num_action_repeats}.')
    if not 0 <= min_noop_frames <= max_noop_frames:
      raise ValueError('Need 0 <= min_noop_frames <= max_noop_frames, got '
                       f'{min_noop_frames} and {max_noop_frames}.')
    if max_episode_frames < 0:
      raise ValueError(f'max_episode_frames must be >= 0 (0: no cap), got '
                       f'{max_episode_frames}.')
    # Two independent streams from one seed, like DQN Zoo's run loop draws
    # the environment's and the no-op wrapper's seeds from one RandomState.
    seeds = np.random.RandomState(seed).randint(1, 2**31 - 1, size=2)
    self._ale = make_ale(game, seeds[0]) if ale is None else ale
    self._noop_rng = np.random.RandomState(seeds[1])
    self._action_set = np.asarray(self._ale.getMinimalActionSet())
    self._max_episode_frames = max_episode_frames
    self._num_action_repeats = num_action_repeats
    self._num_pooled_frames = num_pooled_frames
    self._num_stacked_frames = num_stacked_frames
    self._min_noop_frames = min_noop_frames
    self._max_noop_frames = max_noop_frames
    self._height, self._width = height, width
    self._life_loss_ends_episode = life_loss_ends_episode
    self._game_goes_on = False  # The last LAST was a life lost.
    self._stack = []
    self._lives = 0
    self._episode_frames = 0
    self._reset_next_step = True
    self.last_num_noop_frames = 0  # For tests and diagnostics.

  @property
  def num_actions(self) -> int:
    return len(self._action_set)

  @property
  def ale(self):
    return self._ale

  def _observation(self, pooled_rgb: Optional[np.ndarray]) -> np.ndarray:
    if pooled_rgb is None:  # Game ended before the pooled frames: padding.
      frame = np.zeros((self._height, self._width), np.uint8)
    else:
      frame = process_frame(pooled_rgb, self._height, self._width)
    self._stack.append(frame)
    del self._stack[:-self._num_stacked_frames]
    return environment.stack_frames(self._stack, self._num_stacked_frames)

  def reset(self) -> dm_env.TimeStep:
    """Reset the game, play the random no-ops, return the FIRST step.

    After a life lost that ended the episode, the game goes on instead: the
    FIRST step is its current screen, the frame cap's count goes on.
    """
    if self._game_goes_on:
      self._game_goes_on = False
      self._stack = []
      self._reset_next_step = False
      return dm_env.restart(self._observation(self._ale.getScreenRGB()))
    self._ale.reset_game()
    num_noops = self._noop_rng.randint(self._min_noop_frames,
                                       self._max_noop_frames + 1)
    noop = self._action_set[0]
    for _ in range(num_noops):
      self._ale.act(noop)
      if self._ale.game_over():
        raise RuntimeError(f'Episode ended while applying {num_noops} no-op '
                           'frames.')
    self.last_num_noop_frames = num_noops
    self._lives = self._ale.lives()
    self._episode_frames = 0
    self._stack = []
    self._reset_next_step = False
    # max(zero padding, screen) = screen, as in DQN Zoo's FIRST step.
    return dm_env.restart(self._observation(self._ale.getScreenRGB()))

  def step(self, action) -> dm_env.TimeStep:
    """Repeat `action` (index in the minimal set); reset if last was LAST."""
    if self._reset_next_step:
      return self.reset()
    ale_action = self._action_set[action]
    first_pooled = self._num_action_repeats - self._num_pooled_frames
    pooled = None
    reward = 0.0
    discount = 1.0
    for repeat in range(self._num_action_repeats):
      reward += self._ale.act(ale_action)
      self._episode_frames += 1
      lives = self._ale.lives()
      game_over = self._ale.game_over()
      truncated = (self._max_episode_frames > 0 and
                   self._episode_frames >= self._max_episode_frames)
      # A life lost bootstraps no further, though the episode goes on.
      life_lost = lives < self._lives and not truncated
      if game_over or life_lost:
        discount = 0.0
      self._lives = lives
      if repeat >= first_pooled:
        screen = self._ale.getScreenRGB()
        pooled = screen if pooled is None else np.maximum(pooled, screen)
      self._game_goes_on = (self._life_loss_ends_episode and life_lost
                            and not game_over)
      last = game_over or truncated or self._game_goes_on
      if last:
        break
    # A repeat cut short pools its screens with DQN Zoo's zero padding:
    # max(screen, 0) = screen, and no screen at all gives a black frame.
    self._reset_next_step = last
    step_type = dm_env.StepType.LAST if last else dm_env.StepType.MID
    return dm_env.TimeStep(step_type, reward, discount,
                           self._observation(pooled))

  def observation_spec(self) -> specs.Array:
    return specs.Array((self._height, self._width, self._num_stacked_frames),
                       np.uint8, name='observation')

  def action_spec(self) -> specs.DiscreteArray:
    return specs.DiscreteArray(self.num_actions, dtype=np.int32, name='action')

  def close(self) -> None:
    self._ale = None


class ReferenceBatchedEnvironment(environment.BatchedEnvironment):
  """K `AtariEnvironment`s stepped one by one in Python (K=1: DQN Zoo)."""

  def __init__(self, environments: Sequence[AtariEnvironment]):
    if not environments:
      raise ValueError('Need at least one environment.')
    num_actions = {env.num_actions for env in environments}
    if len(num_actions) != 1:
      raise ValueError(f'Streams disagree on the action count: {num_actions}.')
    self._envs = list(environments)
    self.num_envs = len(self._envs)
    self.num_actions = num_actions.pop()
    self._started = False

  @property
  def environments(self) -> Sequence[AtariEnvironment]:
    return self._envs

  def _batch(self, timesteps) -> environment.BatchedTimeStep:
    return environment.BatchedTimeStep(
        step_type=np.array([t.step_type for t in timesteps], np.int8),
        reward=np.array([0.0 if t.first() else t.reward for t in timesteps],
                        np.float32),
        discount=np.array([1.0 if t.first() else t.discount
                           for t in timesteps], np.float32),
        observation=np.stack([t.observation for t in timesteps]),
    )

  def reset(self) -> environment.BatchedTimeStep:
    self._started = True
    return self._batch([env.reset() for env in self._envs])

  def step(self, actions) -> environment.BatchedTimeStep:
    if not self._started:
      raise RuntimeError('Call reset() before step().')
    actions = environment.check_actions(actions, self.num_envs,
                                        self.num_actions)
    return self._batch([env.step(a) for env, a in zip(self._envs, actions)])

  def close(self) -> None:
    for env in self._envs:
      env.close()


def make_atari_environment(
    game: str, seed: int, num_envs: int = 1, mode: str = 'reference',
    max_episode_frames: int = 108_000, num_threads: int = 0,
    ale_factory: Optional[Callable[[str, int], object]] = None,
    **reference_options) -> environment.BatchedEnvironment:
  """Return a batched Atari environment under the DQN Zoo protocol.

  mode: 'reference' (K AtariEnvironments; K=1 is DQN Zoo) or 'vector'
  (vector_env). 'vector' only: num_threads (0: min(K, CPU count)).
  'reference' only: ale_factory, fn(game, seed) -> ALE (tests), and
  **reference_options, AtariEnvironment's preprocessing.
  """
  atari_data.check_game(game)
  if mode == 'reference':
    envs = []
    for s in environment.stream_seeds(seed, num_envs):
      ale = None if ale_factory is None else ale_factory(game, int(s))
      envs.append(AtariEnvironment(game, int(s), max_episode_frames,
                                   ale=ale, **reference_options))
    return ReferenceBatchedEnvironment(envs)
  if mode == 'vector':
    return vector_env.VectorAtariEnvironment(
        game, seed, num_envs=num_envs, max_episode_frames=max_episode_frames,
        num_threads=num_threads)
  raise ValueError(f"mode must be 'reference' or 'vector', got {mode!r}.")
