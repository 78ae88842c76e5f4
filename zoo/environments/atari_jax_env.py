"""Atari in jitted code: vector_env's streams on ale-py's XLA interface.

Gives `vector_env.VectorAtariEnvironment`'s timesteps bit for bit; its limits
(no vmap, the handle threaded through, actions unchecked): docs/environments.md.
"""

from typing import NamedTuple, Tuple

import jax
import jax.numpy as jnp
import numpy as np

from zoo.environments import environment
from zoo.environments import vector_env


class TimeStep(NamedTuple):
  """environment.BatchedTimeStep's fields, then the newest frame."""
  step_type: jax.Array    # [K] int8: FIRST, MID or LAST.
  reward: jax.Array       # [K] float32, raw sum over the repeats; 0 on FIRST.
  discount: jax.Array     # [K] float32, 0 at game over and on a life loss.
  observation: jax.Array  # [K, 84, 84, 4] uint8, DQN Zoo's end-padded stacks.
  frame: jax.Array        # [K, 84, 84] uint8, the newest: the stack's last.


class EnvState(NamedTuple):
  """The emulators' handle and what the step mapping carries."""
  handle: jax.Array        # [8] uint8, threads the emulators' calls in order.
  streams: vector_env.StreamState  # [K] arrays.


class AtariJaxEnvironment:
  """K Atari streams as pure jittable functions of an `EnvState`.

  Owns the emulators; `reset` and `step` are pure in their arguments (the
  handle names the emulators' state). Environments of one game, K and frame
  cap are equal: one compiled program runs any of them on its own emulators.
  """

  # The FFI calls cannot be vmapped: one seed per compiled program.
  vmaps = False
  # The emulators' state cannot be saved: a resume restarts the streams.
  restores = False

  def __init__(self, game: str, seed: int, num_envs: int = 1,
               max_episode_frames: int = 108_000, num_threads: int = 0):
    """Create the emulators; `self.seeds`: the stream seeds of `seed`."""
    vector_env.check_arguments(game, num_envs, max_episode_frames)
    self.seeds = environment.stream_seeds(seed, num_envs).astype(np.int32)
    self._env = vector_env.make_vector_env(game, num_envs, max_episode_frames,
                                           num_threads)
    self.handle, self._reset, self._step = self._env.xla()
    self.game = game
    self.num_envs = num_envs
    self.num_actions = int(self._env.single_action_space.n)
    self.max_episode_frames = max_episode_frames
    self.observation_shape = (84, 84, 4)

  def _key(self):
    return (self.game, self.num_envs, self.max_episode_frames)

  def __eq__(self, other) -> bool:
    return (isinstance(other, AtariJaxEnvironment) and
            self._key() == other._key())

  def __hash__(self) -> int:
    return hash(self._key())

  def __repr__(self) -> str:
    return (f'AtariJaxEnvironment({self.game!r}, num_envs={self.num_envs}, '
            f'max_episode_frames={self.max_episode_frames})')

  def initial_state(self) -> EnvState:
    """Return the state `reset` takes first: the emulators' handle."""
    zeros = np.zeros(self.num_envs, np.int32)
    return EnvState(np.asarray(self.handle), vector_env.StreamState(
        lives=zeros, last=np.zeros(self.num_envs, bool), episode_step=zeros,
        noop_frames=zeros))

  def reset(self, state: EnvState, seeds=None, keys=None
            ) -> Tuple[EnvState, TimeStep]:
    """Start a new episode in every stream; every step type is FIRST.

    `state`: `initial_state()` or the latest (its handle orders the calls);
    `seeds` [K] int32: reseed the emulators (reloads the ROMs) as a fresh
    VectorAtariEnvironment's; None: go on as its later resets. `keys`: unused.
    """
    del keys
    if seeds is None:
      seeds = np.full(self.num_envs, -1, np.int32)
    handle, (stacks, info) = self._reset(state.handle,
                                         jnp.asarray(seeds, jnp.int32))
    streams, timestep = vector_env.first_step(vector_env.StreamState(),
                                              stacks, info, jnp)
    return EnvState(handle, streams), TimeStep(*timestep, frame=stacks[:, -1])

  def step(self, state: EnvState, actions: jax.Array, keys=None
           ) -> Tuple[EnvState, TimeStep]:
    """Step every stream ([K] actions); after a LAST: FIRST, action ignored."""
    del keys
    handle, outputs = self._step(state.handle, jnp.asarray(actions, jnp.int32))
    streams, timestep = vector_env.next_step(state.streams, *outputs, jnp)
    return (EnvState(handle, streams),
            TimeStep(*timestep, frame=outputs[0][:, -1]))

  def close(self) -> None:
    """Release the emulators; no handle of them may be used after this."""
    if self._env is not None:
      self._env.close()
      self._env = None

  def __enter__(self):
    return self

  def __exit__(self, *unused_exc):
    self.close()


make = AtariJaxEnvironment  # make(game, seed, num_envs=1, ...).
