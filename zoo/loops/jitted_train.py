"""The jitted loop's pure functions: train and evaluate a group of seeds.

`make_train` returns pure functions of one group of seeds (the Anakin
pattern), on the suite's K-stream JAX environment and replay;
zoo.loops.jitted_loop jits them. The agent is zoo.agent.learning's; κ is
data of the program. Blocks, counts and the training streams:
docs/jitted-loop.md.
"""

from typing import Any, Callable, NamedTuple

import haiku as hk
import jax
import jax.numpy as jnp

from zoo.agent import counts as counts_lib
from zoo.agent import learning as agent_lib
from zoo.loops import phase_accounting
from zoo.replay import device_replay


class Streams(NamedTuple):
  """One seed's K environment streams and its phase's statistics."""
  env_state: Any
  timestep: Any                 # The adapter's TimeStep, fields [K, ...].
  env_key: jnp.ndarray
  tally: phase_accounting.Tally  # The phase's frames, episodes, returns.
  value_sum: jnp.ndarray        # float32, max-Q of the states acted on.
  value_count: jnp.ndarray      # int32.
  non_binary: jnp.ndarray       # int32, steps the replay refuses to store.


class SeedState(NamedTuple):
  """What one seed carries across iterations (checkpointed)."""
  params: Any
  target_params: Any
  opt_state: Any
  replay: device_replay.DeviceArrays  # The suite's JaxReplay's.
  episode_step: jnp.ndarray           # [K] int32, the replay's per stream.
  rng_key: jnp.ndarray                # Acting (train) and learning.
  eval_rng_key: jnp.ndarray
  huber_param: jnp.ndarray            # float32 [], QR's κ, read by the loss.
  # The training streams; their timestep is the next to act on.
  train_streams: Streams


class Phase(NamedTuple):
  """What starts a phase's streams of one seed (zoo.loops.build's seeds)."""
  key: jnp.ndarray    # [2], PRNGKey(the phase's environment seed).
  seeds: jnp.ndarray  # [K] int32, environment.stream_seeds of that seed.


class Functions(NamedTuple):
  """A seed's pure functions (make_train); JittedLoop maps and jits them."""
  init: Callable           # (key, first train Phase, κ, env state) -> state
  start_train: Callable    # (state, Phase) -> the phase's SeedState
  restart: Callable        # (state, Phase, env state) -> fresh train streams
  train_chunk: Callable    # (states, frame_t, num_blocks) -> ...
  eval_seed: Callable      # (params, eval key, Phase, env state) -> (key,
                           # streams)


def make_learn(cfg: counts_lib.Counts, replay: device_replay.JaxReplay,
               network: hk.Transformed,
               loss_of_kappa: Callable[[Any], agent_lib.LossFn], optimizer
               ) -> Callable:
  """Return learn(SeedState) -> (SeedState, loss): one block's updates."""
  target_fn = lambda *a: agent_lib.td_target(  # pylint: disable=g-long-lambda
      network, cfg.additional_discount, *a)

  def learn(state: SeedState):
    loss_fn = loss_of_kappa(state.huber_param)
    update_fn = lambda *a: agent_lib.update(  # pylint: disable=g-long-lambda
        network, optimizer, loss_fn, cfg.additional_discount, cfg.grad_scale,
        *a)
    params, opt_state, rng_key, losses = agent_lib.sample_and_update(
        update_fn, target_fn, replay.sample, cfg.updates_per_block,
        cfg.batch_size,
        state.params, state.target_params, state.opt_state, state.replay,
        state.rng_key, sampled_levels=agent_lib.samples_levels(network))
    return state._replace(params=params, opt_state=opt_state,
                          rng_key=rng_key), losses[-1]

  return learn


def make_train(cfg: counts_lib.Counts, env, replay: device_replay.JaxReplay,
               network: hk.Transformed,
               loss_of_kappa: Callable[[Any], agent_lib.LossFn], optimizer
               ) -> Functions:
  """Return the pure functions of a seed (map and jit them in one place).

  Args:
    cfg: the static counts (zoo.loops.build.counts').
    env: a K-stream JAX environment (ARCHITECTURE.md), the program's
      (another of the same game and K runs it too: its state is data).
    replay: the suite's replay for env's observations.
    network: the Haiku network on [B, *cfg.observation_shape] (or a
      zoo.agent.learning.SampledLevelNetwork: IQN).
    loss_of_kappa: fn(κ) -> the loss, κ a traced float32 (LearnerParts').
    optimizer: zoo.agent.learning.make_optimizer's.
  """
  program = _Program(cfg, env, replay, network, optimizer, make_learn(
      cfg, replay, network, loss_of_kappa, optimizer))
  return Functions(program.init, program.start_train, program.restart,
                   program.train_chunk, program.eval_seed)


def map_seeds(fn: Callable, vmaps: bool, in_axes=0) -> Callable:
  """Return fn over a group of seeds: vmapped, or the one seed of a group of 1.

  `in_axes` as jax.vmap's (0 or None per argument). Environments that
  cannot be vmapped (`vmaps` False) run groups of one seed.
  """
  if vmaps:
    return jax.vmap(fn, in_axes=in_axes)
  axes = in_axes if isinstance(in_axes, (tuple, list)) else None

  def one_seed(*args):
    args = [a if axes is not None and axes[i] is None else
            jax.tree.map(lambda x: x[0], a) for i, a in enumerate(args)]
    return jax.tree.map(lambda x: x[None], fn(*args))

  return one_seed


class _Program:
  """The pieces of a seed's program; make_train hands out five of them."""

  def __init__(self, cfg: counts_lib.Counts, env,
               replay: device_replay.JaxReplay,
               network, optimizer, learn):
    self.cfg, self.env, self.replay, self.network = cfg, env, replay, network
    self.optimizer, self.learn = optimizer, learn
    self.k = cfg.num_streams

  def init(self, key, phase: Phase, huber_param, env_state) -> SeedState:
    """Return a seed's state; its streams: the first training phase's."""
    cfg = self.cfg
    init_key, rng_key, eval_rng_key = jax.random.split(key, 3)
    sample_observation = jnp.zeros((1,) + cfg.observation_shape, jnp.uint8)
    params = self.network.init(init_key, sample_observation)
    return SeedState(params, jax.tree.map(jnp.copy, params),
                     self.optimizer.init(params),
                     self.replay.empty(self.k, cfg.stream_capacity),
                     jnp.zeros(self.k, jnp.int32), rng_key, eval_rng_key,
                     jnp.asarray(huber_param, jnp.float32),
                     self.start_phase(phase, env_state))

  def start_phase(self, phase: Phase, env_state) -> Streams:
    """Return fresh streams of `phase` at a phase's start."""
    env_key, *reset_keys = jax.random.split(phase.key, self.k + 1)
    env_state, timestep = self.env.reset(env_state, phase.seeds,
                                         jnp.stack(reset_keys))
    return self.phase_start(env_state, timestep, env_key,
                            jnp.zeros(self.k, jnp.float32))

  @staticmethod
  def phase_start(env_state, timestep, env_key, running) -> Streams:
    """Return streams at a phase's start: zero statistics."""
    return Streams(env_state, timestep, env_key,
                   phase_accounting.start(running, xp=jnp), jnp.float32(0),
                   jnp.int32(0), jnp.int32(0))

  def start_train(self, state: SeedState, phase: Phase) -> SeedState:
    """Return the state at a training phase's start (is_dqn_zoo's rule)."""
    streams = state.train_streams
    if phase_accounting.is_dqn_zoo(self.k):
      return self.restart(state, phase, streams.env_state)
    return state._replace(train_streams=self.phase_start(
        *streams[:3], streams.tally.running))

  def restart(self, state: SeedState, phase: Phase, env_state) -> SeedState:
    """Return the state with fresh training streams of `phase`."""
    return state._replace(train_streams=self.start_phase(phase, env_state))

  def env_step(self, streams: Streams, actions) -> Streams:
    """Step the K streams (the environment cuts episodes at the frame cap)."""
    env_key, step_key = jax.random.split(streams.env_key)
    env_state, timestep = self.env.step(
        streams.env_state, actions, jax.random.split(step_key, self.k))
    return streams._replace(env_state=env_state, timestep=timestep,
                            env_key=env_key)

  def account(self, streams: Streams, budget: int) -> Streams:
    """Count the current timestep (zoo.loops.phase_accounting)."""
    timestep = streams.timestep
    return streams._replace(
        tally=phase_accounting.count(streams.tally, timestep.step_type,
                                     timestep.reward, budget,
                                     self.cfg.num_action_repeats, xp=jnp),
        non_binary=streams.non_binary + self.replay.refuses(
            timestep.observation).astype(jnp.int32))

  def observations(self, streams: Streams):
    """Return the streams' states as the network takes them [K, ...]."""
    return streams.timestep.observation.reshape(
        (self.k,) + self.cfg.observation_shape)

  def act(self, carry, step_frame):
    """Act on the K streams, store the step and step them (a scan body)."""
    state, streams = carry
    epsilon = self.cfg.epsilon.at(step_frame, xp=jnp)
    rng_key, actions, values = agent_lib.select_action(
        self.network, state.params, state.rng_key,
        self.observations(streams), epsilon)
    replay, episode_step = self.replay.store(
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
        frame_t + cfg.step_frames * jnp.arange(cfg.steps_per_block))
    end_t = frame_t + cfg.block_frames
    # Unbatched (frame_t is shared): real branches under the seeds' vmap.
    learning = cfg.held(end_t) >= cfg.min_replay_size
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
    block = map_seeds(self.block, self.env.vmaps, in_axes=(0, None))

    def body(carry, _):
      states, frame_t, last_loss = carry
      states, loss = block(states, frame_t)
      last_loss = jnp.where(jnp.isnan(loss), last_loss, loss)
      return (states, frame_t + self.cfg.block_frames, last_loss), None

    num_seeds = states.huber_param.shape[0]
    (states, frame_t, last_loss), _ = jax.lax.scan(
        body, (states, frame_t, jnp.full(num_seeds, jnp.nan, jnp.float32)),
        None, length=num_blocks)
    return states, frame_t, last_loss

  def eval_seed(self, params, eval_rng_key, phase: Phase, env_state):
    """Evaluate one seed on fresh streams of `phase` (evaluation's rule).

    Returns (eval_rng_key, the phase's streams): only they are carried.
    """
    cfg = self.cfg
    whole_episodes = not phase_accounting.is_dqn_zoo(self.k)

    def body(carry):
      eval_rng_key, streams, _ = carry
      eval_rng_key, actions, _ = agent_lib.select_action(
          self.network, params, eval_rng_key, self.observations(streams),
          cfg.eval_epsilon)
      streams = self.account(streams, cfg.num_eval_frames)
      done = phase_accounting.is_over(streams.tally, cfg.num_eval_frames,
                                      whole_episodes, xp=jnp)
      return eval_rng_key, self.env_step(streams, actions), done

    eval_rng_key, streams, _ = jax.lax.while_loop(
        lambda carry: ~carry[2], body,
        (eval_rng_key, self.start_phase(phase, env_state), jnp.bool_(False)))
    return eval_rng_key, streams
