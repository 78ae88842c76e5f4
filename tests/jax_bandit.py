"""A tiny JAX environment with zoo.environments.minatar_jax_env's interface, for tests.

Each step shows a 10x10x2 binary grid: channel 0 marks the rewarded action
(column `target` of row 0), channel 1 the step of the episode (row t). The
action equal to the target earns 1. Episodes last `episode_length` steps,
the last one LAST with discount 0; the next step is FIRST (dm_env's
auto-reset, its action ignored). A greedy learner reaches
`episode_length - 1` per episode (the FIRST step earns nothing); a uniform
random policy (episode_length - 1) / num_actions.
"""

from typing import NamedTuple

import jax
import jax.numpy as jnp

from zoo.environments import minatar_jax_env


class TimeStep(NamedTuple):
  step_type: jnp.ndarray
  reward: jnp.ndarray
  discount: jnp.ndarray
  observation: jnp.ndarray


class State(NamedTuple):
  t: jnp.ndarray
  target: jnp.ndarray
  last: jnp.ndarray


class Bandit:
  """A contextual bandit in episodes (see the module doc)."""

  def __init__(self, num_actions: int = 3, episode_length: int = 5):
    self.num_actions = num_actions
    self.episode_length = episode_length
    self.observation_shape = (10, 10, 2)

  def _observation(self, state: State) -> jnp.ndarray:
    grid = jnp.zeros(self.observation_shape, jnp.uint8)
    grid = grid.at[0, state.target, 0].set(1)
    return grid.at[state.t, 0, 1].set(1)

  def reset(self, rng_key):
    state = State(jnp.int32(0),
                  jax.random.randint(rng_key, (), 0, self.num_actions),
                  jnp.bool_(False))
    return state, TimeStep(jnp.int8(0), jnp.float32(0), jnp.float32(1),
                           self._observation(state))

  def step(self, state: State, action, rng_key):
    reset_state, reset_step = self.reset(rng_key)
    t = state.t + 1
    last = t >= self.episode_length - 1
    moved = State(t, jax.random.randint(rng_key, (), 0, self.num_actions),
                  last)
    moved_step = TimeStep(
        jnp.where(last, jnp.int8(2), jnp.int8(1)),
        (action == state.target).astype(jnp.float32),
        jnp.where(last, 0.0, 1.0).astype(jnp.float32),
        self._observation(moved))
    return jax.tree.map(lambda a, b: jnp.where(state.last, a, b),
                        (reset_state, reset_step), (moved, moved_step))


def streams(num_envs: int = 1, **kwargs) -> minatar_jax_env.Streams:
  """Return K streams of a Bandit (its keywords): the jitted loop's environment."""
  return minatar_jax_env.Streams(Bandit(**kwargs), num_envs)
