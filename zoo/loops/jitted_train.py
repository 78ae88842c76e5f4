"""The jitted MinAtar loop's pure functions: train and evaluate, seeds vmapped.

`make_train` returns pure functions of one group of seeds (the Anakin
pattern); zoo.loops.jitted_loop jits them. The agent is zoo.agent.learning's;
κ is data of the program. Blocks, counts and the training streams:
docs/minatar-jitted-loop.md.
"""

from typing import Any, Callable, NamedTuple

import haiku as hk
import jax
import jax.numpy as jnp

from zoo.agent import learning as agent_lib
from zoo.loops import phase_accounting
from zoo.replay import device_replay
from zoo.replay import packed_replay


class LoopConfig(NamedTuple):
  """The static counts of a group of runs (frames = steps on MinAtar)."""
  num_streams: int            # K streams per seed.
  observation_shape: tuple    # (10, 10, C) uint8, binary.
  stream_capacity: int        # Replay slots per stream (capacity // K).
  batch_size: int
  min_replay_size: int        # Transitions (all streams) before learning.
  learn_period: int           # Frames per update.
  target_period: int          # Frames between target copies.
  max_abs_reward: float
  eval_epsilon: float
  epsilon: agent_lib.LinearSchedule  # Training ε by frame (zoo.loops.build).
  num_train_frames: int
  num_eval_frames: int

  @property
  def steps_per_block(self) -> int:
    return max(self.learn_period // self.num_streams, 1)

  @property
  def block_frames(self) -> int:
    return self.steps_per_block * self.num_streams

  @property
  def updates_per_block(self) -> int:
    return self.block_frames // self.learn_period

  def updates_done(self, frame_t: int) -> int:
    """Return the updates run by frame `frame_t` (a block boundary)."""
    k = self.num_streams
    if k * self.stream_capacity < self.min_replay_size:
      return 0
    first_end = k * -(-self.min_replay_size // k)  # Frames held >= minimum.
    first_block = -(-first_end // self.block_frames)  # Blocks up to then.
    return self.updates_per_block * max(
        frame_t // self.block_frames - first_block + 1, 0)

  @property
  def replay_bytes_per_seed(self) -> int:
    return packed_replay.nbytes(self.num_streams, self.stream_capacity,
                                self.observation_shape)


class Streams(NamedTuple):
  """One seed's K environment streams and its phase's statistics."""
  env_state: Any
  timestep: Any                 # The adapter's TimeStep, fields [K, ...].
  env_key: jnp.ndarray
  tally: phase_accounting.Tally  # The phase's frames, episodes, returns.
  value_sum: jnp.ndarray        # float32, max-Q of the states acted on.
  value_count: jnp.ndarray      # int32.
  non_binary: jnp.ndarray       # int32, observations with a value > 1.


class SeedState(NamedTuple):
  """What one seed carries across iterations (checkpointed)."""
  params: Any
  target_params: Any
  opt_state: Any
  replay: device_replay.DeviceArrays  # zoo.replay.packed_replay's.
  episode_step: jnp.ndarray           # [K] int32, the replay's per stream.
  rng_key: jnp.ndarray                # Acting (train) and learning.
  eval_rng_key: jnp.ndarray
  huber_param: jnp.ndarray            # float32 [], QR's κ, read by the loss.
  # The training streams; their timestep is the next to act on.
  train_streams: Streams


class Functions(NamedTuple):
  """The pure functions of a group (make_train); JittedLoop jits them."""
  init: Callable           # (seed key, first train env key, κ) -> SeedState
  start_train: Callable    # (state, env key) -> the phase's SeedState
  train_chunk: Callable    # (states, frame_t, num_blocks) -> ...
  eval_phase: Callable     # (states, env keys) -> (states, streams)


def make_learn(cfg: LoopConfig, network: hk.Transformed,
               loss_of_kappa: Callable[[Any], agent_lib.LossFn], optimizer,
               additional_discount: float, grad_scale: float) -> Callable:
  """Return learn(SeedState) -> (SeedState, loss): one block's updates."""
  target_fn = lambda *a: agent_lib.td_target(  # pylint: disable=g-long-lambda
      network, additional_discount, *a)
  sampler = lambda replay, key, n: packed_replay.sample(  # pylint: disable=g-long-lambda
      replay, key, n, cfg.observation_shape)

  def learn(state: SeedState):
    loss_fn = loss_of_kappa(state.huber_param)
    update_fn = lambda *a: agent_lib.update(  # pylint: disable=g-long-lambda
        network, optimizer, loss_fn, additional_discount, grad_scale, *a)
    params, opt_state, rng_key, losses = agent_lib.sample_and_update(
        update_fn, target_fn, sampler, cfg.updates_per_block, cfg.batch_size,
        state.params, state.target_params, state.opt_state, state.replay,
        state.rng_key, sampled_levels=agent_lib.samples_levels(network))
    return state._replace(params=params, opt_state=opt_state,
                          rng_key=rng_key), losses[-1]

  return learn


def make_train(cfg: LoopConfig, env, network: hk.Transformed,
               loss_of_kappa: Callable[[Any], agent_lib.LossFn], optimizer,
               additional_discount: float, grad_scale: float) -> Functions:
  """Return the pure functions of a group of runs (jit them in one place).

  Args:
    cfg: the static counts.
    env: a JAX environment (minatar_jax_env.make's interface).
    network: the Haiku network on [B, 10, 10, C, 1] observations (or a
      zoo.agent.learning.SampledLevelNetwork: IQN).
    loss_of_kappa: fn(κ) -> the loss, κ a traced float32 (LearnerParts').
    optimizer: zoo.agent.learning.make_optimizer's.
    additional_discount: γ applied to the environment's discounts.
    grad_scale: the gradient's factor (2/N with scale_grad, else 1).
  """
  program = _Program(cfg, env, network, optimizer, make_learn(
      cfg, network, loss_of_kappa, optimizer, additional_discount,
      grad_scale))
  return Functions(program.init, program.start_train, program.train_chunk,
                   program.eval_phase)


class _Program:
  """The pieces of a group's program; make_train hands out four of them."""

  def __init__(self, cfg: LoopConfig, env, network, optimizer, learn):
    self.cfg, self.env, self.network = cfg, env, network
    self.optimizer, self.learn = optimizer, learn
    self.k = cfg.num_streams

  def init(self, key, env_key, huber_param) -> SeedState:
    """Return a seed's state; its streams: the first training phase's."""
    cfg = self.cfg
    init_key, rng_key, eval_rng_key = jax.random.split(key, 3)
    sample_observation = jnp.zeros((1,) + cfg.observation_shape + (1,),
                                   jnp.uint8)
    params = self.network.init(init_key, sample_observation)
    return SeedState(params, jax.tree.map(jnp.copy, params),
                     self.optimizer.init(params),
                     packed_replay.empty(self.k, cfg.stream_capacity,
                                         cfg.observation_shape),
                     jnp.zeros(self.k, jnp.int32), rng_key, eval_rng_key,
                     jnp.asarray(huber_param, jnp.float32),
                     self.start_phase(env_key))

  def start_phase(self, env_key) -> Streams:
    """Return fresh streams of `env_key` at a phase's start."""
    env_key, *reset_keys = jax.random.split(env_key, self.k + 1)
    env_state, timestep = jax.vmap(self.env.reset)(jnp.stack(reset_keys))
    return self.phase_start(env_state, timestep, env_key,
                            jnp.zeros(self.k, jnp.float32))

  @staticmethod
  def phase_start(env_state, timestep, env_key, running) -> Streams:
    """Return streams at a phase's start: zero statistics."""
    return Streams(env_state, timestep, env_key,
                   phase_accounting.start(running, xp=jnp), jnp.float32(0),
                   jnp.int32(0), jnp.int32(0))

  def start_train(self, state: SeedState, env_key) -> SeedState:
    """Return the state at a training phase's start (streams: is_dqn_zoo's rule)."""
    streams = state.train_streams
    if phase_accounting.is_dqn_zoo(self.k):
      return state._replace(train_streams=self.start_phase(env_key))
    return state._replace(train_streams=self.phase_start(
        *streams[:3], streams.tally.running))

  def env_step(self, streams: Streams, actions) -> Streams:
    """Step the K streams (the adapter cuts episodes at the frame cap)."""
    env_key, step_key = jax.random.split(streams.env_key)
    env_state, timestep = jax.vmap(self.env.step)(
        streams.env_state, actions, jax.random.split(step_key, self.k))
    return streams._replace(env_state=env_state, timestep=timestep,
                            env_key=env_key)

  @staticmethod
  def account(streams: Streams, budget: int) -> Streams:
    """Count the current timestep (zoo.loops.phase_accounting; frames = steps)."""
    timestep = streams.timestep
    return streams._replace(
        tally=phase_accounting.count(streams.tally, timestep.step_type,
                                     timestep.reward, budget, 1, xp=jnp),
        non_binary=streams.non_binary + jnp.any(
            timestep.observation > 1).astype(jnp.int32))

  def act(self, carry, step_frame):
    """Act on the K streams, store the step and step them (a scan body)."""
    state, streams = carry
    epsilon = self.cfg.epsilon.at(step_frame, xp=jnp)
    observation = streams.timestep.observation[..., None]
    rng_key, actions, values = agent_lib.select_action(
        self.network, state.params, state.rng_key, observation, epsilon)
    replay, episode_step = packed_replay.store(
        state.replay, state.episode_step, streams.timestep, actions,
        self.cfg.max_abs_reward)
    state = state._replace(rng_key=rng_key, replay=replay,
                           episode_step=episode_step)
    streams = self.account(streams, self.cfg.num_train_frames)
    streams = streams._replace(
        value_sum=streams.value_sum + jnp.sum(values),
        value_count=streams.value_count + self.k)
    return (state, self.env_step(streams, actions)), None

  def block(self, state: SeedState, frame_t):
    """Act, store and step for one block, then learn when due (one seed).

    Returns (state, the latest update's loss, NaN if none ran).
    """
    cfg = self.cfg
    # A scan, not an unrolled loop: the network and the environment are
    # compiled once per block instead of once per step.
    (state, streams), _ = jax.lax.scan(
        self.act, (state, state.train_streams),
        frame_t + self.k * jnp.arange(cfg.steps_per_block))
    end_t = frame_t + cfg.block_frames
    # Unbatched (frame_t is shared): real branches under the seeds' vmap.
    held = self.k * jnp.minimum(end_t // self.k, cfg.stream_capacity)
    learning = held >= cfg.min_replay_size
    # Only the learner's state passes through the branches: the replay is
    # read there, and a loop-carried replay passed through a branch may be
    # copied on every block.
    replay = state.replay

    def learn_from_replay(learner):
      params, opt_state, rng_key, _ = learner
      updated, loss = self.learn(state._replace(
          params=params, opt_state=opt_state, rng_key=rng_key, replay=replay))
      return (updated.params, updated.opt_state, updated.rng_key,
              loss.astype(jnp.float32))

    params, opt_state, rng_key, loss = jax.lax.cond(
        learning, learn_from_replay, lambda learner: learner,
        (state.params, state.opt_state, state.rng_key, jnp.float32(jnp.nan)))
    copy = learning & (end_t // cfg.target_period >
                       frame_t // cfg.target_period)
    target_params = jax.lax.cond(copy, lambda p, t: p, lambda p, t: t,
                                 params, state.target_params)
    return state._replace(params=params, opt_state=opt_state,
                          rng_key=rng_key, target_params=target_params,
                          train_streams=streams), loss

  def train_chunk(self, states: SeedState, frame_t, num_blocks: int):
    """Run `num_blocks` blocks of every seed.

    Returns (states, frame_t, each seed's latest loss [S], NaN if none).
    """

    def body(carry, _):
      states, frame_t, last_loss = carry
      states, loss = jax.vmap(self.block, in_axes=(0, None))(states, frame_t)
      last_loss = jnp.where(jnp.isnan(loss), last_loss, loss)
      return (states, frame_t + self.cfg.block_frames, last_loss), None

    num_seeds = states.huber_param.shape[0]
    (states, frame_t, last_loss), _ = jax.lax.scan(
        body, (states, frame_t, jnp.full(num_seeds, jnp.nan, jnp.float32)),
        None, length=num_blocks)
    return states, frame_t, last_loss

  def eval_seed(self, params, eval_rng_key, env_key):
    """Evaluate one seed; only the key and the streams are carried."""
    cfg = self.cfg
    whole_episodes = not phase_accounting.is_dqn_zoo(self.k)

    def body(carry):
      eval_rng_key, streams, _ = carry
      observation = streams.timestep.observation[..., None]
      eval_rng_key, actions, _ = agent_lib.select_action(
          self.network, params, eval_rng_key, observation, cfg.eval_epsilon)
      streams = self.account(streams, cfg.num_eval_frames)
      done = phase_accounting.is_over(streams.tally, cfg.num_eval_frames,
                                      whole_episodes, xp=jnp)
      return eval_rng_key, self.env_step(streams, actions), done

    eval_rng_key, streams, _ = jax.lax.while_loop(
        lambda carry: ~carry[2], body,
        (eval_rng_key, self.start_phase(env_key), jnp.bool_(False)))
    return eval_rng_key, streams

  def eval_phase(self, states: SeedState, env_keys):
    eval_rng_key, streams = jax.vmap(self.eval_seed)(
        states.params, states.eval_rng_key, env_keys)
    return states._replace(eval_rng_key=eval_rng_key), streams
