"""MinAtar in JAX: pgx-minatar's games as pure, jit- and vmap-able functions.

They behave as minatar_env's streams, without the stack axis (agreement:
docs/minatar-jax-environment.md). Nothing checks the actions under jit.
"""

import functools
import importlib
import importlib.util
from typing import Any, NamedTuple, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.environments import environment
from zoo.environments import minatar_env

GAMES: Tuple[str, ...] = minatar_env.GAMES

FIRST, MID, LAST = environment.FIRST, environment.MID, environment.LAST

# Games whose pgx-minatar port is not `minatar`'s game, with the reason; make()
# refuses them. Empty: every game agrees (docs/minatar-jax-environment.md).
REFUSED = {}
_INSTALL = "pip install -e '.[minatar]' (pgx==2.6.0, pgx-minatar==0.5.1)."


def check_available(game: str) -> str:
  """Return `game`; ValueError if it cannot run here: refused, or no pgx.

  Imports nothing: importing pgx's modules compiles small computations.
  """
  game = minatar_env.check_game(game)
  if game in REFUSED:
    raise ValueError(f'MinAtar in JAX refuses {game!r}: {REFUSED[game]} Use '
                     'the Python loop (zoo.environments.minatar_env) for it.')
  missing = [name for name in ('pgx', 'pgx_minatar')
             if importlib.util.find_spec(name) is None]
  if missing:
    raise ValueError(f'MinAtar in JAX needs pgx and pgx-minatar (missing: '
                     f'{", ".join(missing)}): {_INSTALL}')
  return game


class TimeStep(NamedTuple):
  """One stream's timestep; vmap for many."""
  step_type: jnp.ndarray    # int8 scalar: 0 FIRST, 1 MID, 2 LAST.
  reward: jnp.ndarray       # float32 scalar.
  discount: jnp.ndarray     # float32 scalar.
  observation: jnp.ndarray  # uint8 [10, 10, C].


class EnvState(NamedTuple):
  """One stream's state."""
  game: Any                    # The pgx-minatar game state.
  episode_frames: jnp.ndarray  # int32: frames since the episode's FIRST.
  last: jnp.ndarray            # bool: the previous step was LAST.


def _pgx_env(game: str, sticky_action_prob: float):
  """Return pgx-minatar's environment of `game` (minimal action set)."""
  # pgx_minatar.space_invaders.MinAtarSpaceInvaders, ...
  class_name = 'MinAtar' + game.title().replace('_', '')
  try:
    importlib.import_module('pgx')
    module = importlib.import_module(f'pgx_minatar.{game}')
  except ImportError as e:
    raise ImportError(
        f'MinAtar in JAX needs pgx and pgx-minatar ({e}): {_INSTALL}'
    ) from None
  return getattr(module, class_name)(
      use_minimal_action_set=True, sticky_action_prob=sticky_action_prob)


class JaxMinAtar:
  """One MinAtar stream as pure functions; holds no mutable state."""

  def __init__(self, game: str, max_episode_frames: int = 108_000,
               sticky_action_prob: float = 0.1):
    """Create the environment of `game` (see make)."""
    game = check_available(game)
    if max_episode_frames < 1:
      raise ValueError('max_episode_frames must be >= 1 (MinAtar episodes can '
                       f'last forever), got {max_episode_frames}.')
    if not 0.0 <= sticky_action_prob <= 1.0:
      raise ValueError('sticky_action_prob must lie in [0, 1], got '
                       f'{sticky_action_prob}.')
    self.game = game
    self.max_episode_frames = int(max_episode_frames)
    self.sticky_action_prob = float(sticky_action_prob)
    self._env = _pgx_env(game, self.sticky_action_prob)
    self.action_set: Tuple[int, ...] = tuple(
        int(a) for a in self._env.minimal_action_set)
    self.num_actions = len(self.action_set)
    self.observation_shape: Tuple[int, int, int] = tuple(
        self._env.observation_shape)

  def _key(self):
    return (self.game, self.max_episode_frames, self.sticky_action_prob)

  # Equal settings, equal environments: jit (static argument) compiles once.
  def __eq__(self, other) -> bool:
    return isinstance(other, JaxMinAtar) and self._key() == other._key()

  def __hash__(self) -> int:
    return hash(self._key())

  def __repr__(self) -> str:
    return (f'JaxMinAtar({self.game!r}, max_episode_frames='
            f'{self.max_episode_frames}, sticky_action_prob='
            f'{self.sticky_action_prob})')

  def _timestep(self, step_type, reward, discount, game) -> TimeStep:
    return TimeStep(jnp.asarray(step_type, jnp.int8),
                    jnp.asarray(reward, jnp.float32),
                    jnp.asarray(discount, jnp.float32),
                    game.observation.astype(jnp.uint8))

  def _first(self, game) -> Tuple[EnvState, TimeStep]:
    state = EnvState(game, jnp.int32(0), jnp.bool_(False))
    return state, self._timestep(FIRST, 0.0, 1.0, game)

  def reset(self, rng_key) -> Tuple[EnvState, TimeStep]:
    """Start an episode; return its state and FIRST timestep."""
    return self._first(self._env.init(rng_key))

  def step(self, state: EnvState, action,
           rng_key) -> Tuple[EnvState, TimeStep]:
    """Step one stream with `action`; after a LAST, start an episode instead."""

    def new_episode():
      # minatar.Environment keeps its previous action across reset(): the new
      # episode's first step may repeat it (sticky), so it is carried over.
      game = self._env.init(rng_key).replace(
          _last_action=state.game._last_action)  # pylint: disable=protected-access
      return self._first(game)

    def same_episode():
      game = self._env.step(state.game, jnp.asarray(action, jnp.int32),
                            rng_key)
      frames = state.episode_frames + 1
      over = game.terminated
      last = over | (frames >= self.max_episode_frames)
      return (EnvState(game, frames, last),
              self._timestep(jnp.where(last, LAST, MID), game.rewards[0],
                             jnp.where(over, 0.0, 1.0), game))

    return jax.lax.cond(state.last, new_episode, same_episode)


make = JaxMinAtar  # make(game, max_episode_frames=..., sticky_action_prob=...).


class Streams(NamedTuple):
  """K streams of one JaxMinAtar, each drawing from its own key."""
  env: JaxMinAtar
  num_envs: int

  vmaps = True     # Seeds of a group run vmapped.
  restores = True  # A checkpoint holds the streams: a resume goes on with them.

  @property
  def num_actions(self) -> int:
    return self.env.num_actions

  @property
  def observation_shape(self) -> Tuple[int, int, int, int]:
    """Return one state as the network takes it: a stack of one frame."""
    return self.env.observation_shape + (1,)

  def initial_state(self):
    """Return zeros of the streams' state (reset ignores it)."""
    shapes = jax.eval_shape(jax.vmap(self.env.reset), jax.random.split(
        jax.random.PRNGKey(0), self.num_envs))[0]
    return jax.tree.map(lambda x: np.zeros(x.shape, x.dtype), shapes)

  def reset(self, state, seeds, keys) -> Tuple[EnvState, TimeStep]:
    """Start an episode in every stream from its key [K, 2]."""
    del state, seeds
    return jax.vmap(self.env.reset)(keys)

  def step(self, state, actions, keys) -> Tuple[EnvState, TimeStep]:
    """Step every stream with its action and key."""
    return jax.vmap(self.env.step)(state, actions, keys)

  def close(self) -> None:
    """Nothing to release."""


def make_streams(game: str, num_envs: int, **kwargs) -> Streams:
  """Return K streams of a MinAtar game (make's keywords)."""
  if num_envs < 1:
    raise ValueError(f'num_envs must be >= 1, got {num_envs}.')
  return Streams(make(game, **kwargs), num_envs)


# The random policy of scripts.experiments: jitted, the environment static.


@functools.partial(jax.jit, static_argnums=(0, 2))
def random_policy_steps(env: JaxMinAtar, rng_key, num_steps: int):
  """Return (rng_key, step_type, reward) of one stream's random policy.

  The reset's FIRST is the first of the `num_steps` timesteps.
  """
  rng_key, reset_key = jax.random.split(rng_key)
  state, first = env.reset(reset_key)

  def body(carry, unused):
    state, key = carry
    key, action_key, step_key = jax.random.split(key, 3)
    action = jax.random.randint(action_key, (), 0, env.num_actions)
    state, timestep = env.step(state, action, step_key)
    return (state, key), (timestep.step_type, timestep.reward)

  (_, rng_key), (step_type, reward) = jax.lax.scan(
      body, (state, rng_key), None, length=num_steps - 1)
  step_type = jnp.concatenate([first.step_type[None], step_type])
  reward = jnp.concatenate([first.reward[None], reward])
  return rng_key, step_type, reward


@functools.partial(jax.jit, static_argnums=(0, 2))
def random_policy_episodes(env: JaxMinAtar, rng_key, num_episodes: int):
  """Return (rng_key, returns, lengths in frames) of vmapped random episodes."""
  rng_key, reset_key = jax.random.split(rng_key)
  states, _ = jax.vmap(env.reset)(jax.random.split(reset_key, num_episodes))
  zeros = jnp.zeros(num_episodes)

  def not_all_done(carry):
    return ~carry[-1].all()

  def body(carry):
    states, key, returns, lengths, done = carry
    key, action_key, step_key = jax.random.split(key, 3)
    actions = jax.random.randint(action_key, (num_episodes,), 0,
                                 env.num_actions)
    states, timestep = jax.vmap(env.step)(
        states, actions, jax.random.split(step_key, num_episodes))
    returns = returns + jnp.where(done, 0.0, timestep.reward)
    lengths = lengths + jnp.where(done, 0, 1)
    done = done | (timestep.step_type == LAST)
    return states, key, returns, lengths, done

  _, rng_key, returns, lengths, _ = jax.lax.while_loop(
      not_all_done, body, (states, rng_key, zeros, zeros.astype(jnp.int32),
                           jnp.zeros(num_episodes, bool)))
  return rng_key, returns, lengths
