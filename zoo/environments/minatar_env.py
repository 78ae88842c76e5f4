"""K MinAtar games (Young & Tian, 2019) as one BatchedEnvironment.

A step is one frame in the minimal action set; the discount is 0 at game over,
1 at the frame cap (docs/environments.md).
"""

import contextlib
import difflib
import functools
import importlib.abc
import logging
import sys
from typing import Tuple

import numpy as np

from zoo.environments import environment

GAMES: Tuple[str, ...] = ('asterix', 'breakout', 'freeway', 'seaquest',
                          'space_invaders')
# A cell's colour by its first set channel (0: none): Okabe-Ito-like hues.
_PALETTE = np.asarray(
    [(0, 0, 0), (230, 159, 0), (86, 180, 233), (0, 158, 115), (240, 228, 66),
     (0, 114, 178), (213, 94, 0), (204, 121, 167), (255, 255, 255),
     (153, 153, 153), (120, 60, 20), (60, 120, 20)], np.uint8)


def check_game(name: str) -> str:
  """Return `name` if it is a MinAtar game, else raise a ValueError."""
  if name in GAMES:
    return name
  close = difflib.get_close_matches(str(name), GAMES, n=2, cutoff=0.6)
  hint = (f' Did you mean {" or ".join(repr(c) for c in close)}?' if close
          else '')
  raise ValueError(f'Unknown MinAtar game {name!r}.{hint} Use one of: '
                   f'{", ".join(GAMES)}.')


class NotInstalledError(ImportError):
  """MinAtar, an optional part of the zoo, is not installed."""


# MinAtar's package imports matplotlib and seaborn (and through them pandas and
# scipy) for its display window, which the zoo never opens: about 2.5 s of
# every MinAtar process's start. MinAtar falls back to no display when they
# are missing, so they are hidden while it is imported.
_DISPLAY_LIBRARIES = ('matplotlib', 'seaborn')


class _HideDisplayLibraries(importlib.abc.MetaPathFinder):
  """Make the display libraries not yet imported look missing."""

  def __init__(self):
    self._hidden = {name for name in _DISPLAY_LIBRARIES
                    if name not in sys.modules}

  def find_spec(self, fullname, path, target=None):
    del path, target
    if fullname.partition('.')[0] in self._hidden:
      raise ModuleNotFoundError(f'No module named {fullname!r}', name=fullname)
    return None


@contextlib.contextmanager
def _without_display_libraries():
  """Import inside without the display libraries or MinAtar's warning."""
  finder = _HideDisplayLibraries()
  sys.meta_path.insert(0, finder)
  disabled = logging.root.manager.disable
  logging.disable(logging.WARNING)  # MinAtar's "cannot render" warning.
  try:
    yield
  finally:
    logging.disable(disabled)
    sys.meta_path.remove(finder)


def check_installed():
  """Return `minatar`; without it, NotInstalledError naming the install."""
  try:
    with _without_display_libraries():
      import minatar  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise NotInstalledError(
        "MinAtar is not installed (it is GPL-3.0, an optional part of this "
        "Apache-2.0 project): pip install -e '.[minatar]'") from None
  return minatar


@functools.lru_cache(maxsize=None)
def game_spec(game: str) -> Tuple[int, Tuple[int, ...]]:
  """Return (channels C, minimal action set) of a MinAtar game."""
  env = check_installed().Environment(check_game(game))
  return int(env.state_shape()[2]), tuple(int(a)
                                          for a in env.minimal_action_set())


class MinAtarEnvironment(environment.BatchedEnvironment):
  """K MinAtar streams stepped one after another in Python."""

  def __init__(self, game: str, seed: int, num_envs: int = 1,
               max_episode_frames: int = 108_000,
               sticky_action_prob: float = 0.1,
               difficulty_ramping: bool = True):
    """Create K streams; stream k is seeded with stream_seeds(seed, K)[k]."""
    minatar = check_installed()
    num_channels, action_set = game_spec(game)
    if num_envs < 1:
      raise ValueError(f'num_envs must be >= 1, got {num_envs}.')
    if max_episode_frames < 1:
      raise ValueError('max_episode_frames must be >= 1 (MinAtar episodes can '
                       f'last forever), got {max_episode_frames}.')
    self.num_envs = num_envs
    self.num_actions = len(action_set)
    self.observation_shape = (10, 10, num_channels, 1)
    self._action_set = np.asarray(action_set)
    self._max_episode_frames = max_episode_frames
    self._envs = []
    for stream_seed in environment.stream_seeds(seed, num_envs):
      env = minatar.Environment(game, sticky_action_prob=sticky_action_prob,
                                difficulty_ramping=difficulty_ramping)
      env.seed(int(stream_seed))  # Game and sticky-action randomness.
      self._envs.append(env)
    self._last = None
    self._episode_frames = np.zeros(num_envs, np.int64)

  def _observation(self) -> np.ndarray:
    return np.stack([env.state() for env in self._envs]).astype(
        np.uint8)[..., None]

  def reset(self) -> environment.BatchedTimeStep:
    self._last = np.ones(self.num_envs, bool)  # Every stream starts over.
    return self.step(np.zeros(self.num_envs, int))

  def step(self, actions) -> environment.BatchedTimeStep:
    if self._last is None:
      raise RuntimeError('Call reset() before step().')
    actions = environment.check_actions(actions, self.num_envs,
                                        self.num_actions)
    k = self.num_envs
    step_type = np.full(k, environment.MID)
    reward = np.zeros(k, np.float32)
    discount = np.ones(k, np.float32)
    for i, env in enumerate(self._envs):
      if self._last[i]:
        env.reset()
        self._episode_frames[i] = 0
        step_type[i] = environment.FIRST
        continue
      reward[i], terminal = env.act(int(self._action_set[actions[i]]))
      self._episode_frames[i] += 1
      discount[i] = 0.0 if terminal else 1.0
      if terminal or self._episode_frames[i] >= self._max_episode_frames:
        step_type[i] = environment.LAST
    self._last = step_type == environment.LAST
    return environment.BatchedTimeStep(step_type, reward, discount,
                                       self._observation())

  def rgb_frames(self, scale: int = 1) -> np.ndarray:
    """Return the grids as RGB [K, 10s, 10s, 3] uint8 (s: `scale`).

    A cell takes its first set channel's colour (black if none).
    """
    states = np.stack([env.state() for env in self._envs])
    index = np.where(states.any(-1), np.argmax(states, -1) + 1, 0)
    return _PALETTE[index].repeat(scale, axis=1).repeat(scale, axis=2)

  def close(self) -> None:
    self._envs = []
