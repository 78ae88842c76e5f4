"""One quantile agent (QR-DQN, CR-DQN, NC-CR-DQN, NC-QR-DQN).

The agents differ only by network head and loss (their presets,
zoo.agents). The agent acts on K environment streams at once, stores each step
in a `zoo.replay.FrameReplay` and learns every `learn_period` frames once
the replay holds its minimum. `select_action` and `update` are pure
module-level functions, jitted in the agent's constructor.

How K streams map onto the DQN Zoo protocol (K = 1 is DQN Zoo exactly): the
K streams are K actors sharing one agent. Each agent step selects the K
actions in one batched call (one ε draw per stream), adds the K transitions
to the replay (stream k only ever links to its own previous step), and
advances the frame counter by K x num_action_repeats. The ε schedule, the
learn period (one update per `learn_period` frames summed over the streams:
K x 4 / 16 updates per step, carried over when not whole) and the target
period all read that counter, so the updates per frame, the replay's
transitions per update and ε per frame are the paper's for any K.

The learner runs asynchronously: `update` is dispatched (params and
optimizer state donated) and the step returns, so the environments step and
the replay fills while it computes; the next action selection reads the new
parameters, so acting is never behind the learner (zero staleness).

Two learner options for accelerators, off by default:
- Fused updates (`num_fused_updates` U > 1): updates that fall due are held
  until U are, then run as one dispatch (`fused_update`, U sequential Adam
  steps on U batches sampled at once, the target network run once on all
  U), which pays the launch overhead once per U. The updates per frame are
  unchanged, and pending updates are run before every target copy, so the
  target network copies the parameters of every update due so far, as with
  U = 1. The only change: acting lags the learner by at most U − 1 updates
  (16 (U − 1) frames). `last_loss` is the loss of the last of the U updates.
- A replay on the device (`zoo.device_replay.DeviceFrameReplay`): the
  learner samples and assembles its batches inside its own jitted call
  (`sample_and_update`), for U = 1 as for U > 1.
"""

import functools
from typing import Any, Callable, Dict, NamedTuple, Optional

import chex
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax

import losses
from zoo import device_replay
from zoo import environment
from zoo import replay as replay_lib

LossFn = Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray]  # [B,N],[B,N]->[B]
BASE_OPTIMIZER_EPSILON = 0.01 / 32


class LinearSchedule:
  """Linear schedule in frames, as DQN Zoo's (exploration epsilon)."""

  def __init__(self, begin_value: float, end_value: float, begin_t: int,
               decay_steps: int):
    self._begin_value, self._end_value = begin_value, end_value
    self._begin_t, self._decay_steps = begin_t, max(decay_steps, 1)

  def __call__(self, t: int) -> float:
    return float(linear_schedule(t, self._begin_value, self._end_value,
                                 self._begin_t, self._decay_steps, xp=np))


def linear_schedule(t, begin_value: float, end_value: float, begin_t: int,
                    decay_steps: int, xp=np):
  """Return LinearSchedule's value at frame `t` (xp: numpy or jax.numpy)."""
  decay_steps = max(decay_steps, 1)
  frac = xp.clip(t - begin_t, 0, decay_steps) / decay_steps
  return (1 - frac) * begin_value + frac * end_value


def make_loss_fn(loss: str, huber_param: float = 1.0,
                 smoothing_width: float = 0.0) -> LossFn:
  """Return the per-transition loss between source and target atoms.

  smoothing_width: the multiquadric Cramér loss's width relative to the
  source atoms' spread (h = c · E|X − X'|, gradient stopped), so that the
  smoothing does not depend on the scale of the returns.
  """
  if loss == 'cramer':
    return losses.cramer_loss
  if loss == 'multiquadric_cramer':
    def multiquadric_cramer(source, target):
      spread = jax.lax.stop_gradient(losses.atom_spread(source))
      return losses.multiquadric_cramer_loss(source, target,
                                             smoothing_width * spread)
    return multiquadric_cramer
  if loss == 'qr':
    return functools.partial(losses.quantile_regression_loss,
                             huber_param=huber_param)
  raise ValueError(f"loss must be 'qr', 'cramer' or 'multiquadric_cramer', "
                   f'got {loss!r}.')


def default_optimizer_epsilon(loss: str, num_quantiles: int,
                              scale_grad: bool) -> float:
  """Return Adam's ε: 0.01/32, × 2/N for the Cramér losses or scale_grad."""
  if loss != 'qr' or scale_grad:
    return BASE_OPTIMIZER_EPSILON * 2 / num_quantiles
  return BASE_OPTIMIZER_EPSILON


def make_optimizer(learning_rate: float, eps: float,
                   max_global_grad_norm: float) -> optax.GradientTransformation:
  """Return clip_by_global_norm then Adam, as DQN Zoo (no clip if norm <= 0)."""
  adam = optax.adam(learning_rate=learning_rate, eps=eps)
  if max_global_grad_norm > 0:
    return optax.chain(optax.clip_by_global_norm(max_global_grad_norm), adam)
  return adam


def select_action(network: hk.Transformed, params, rng_key, observations,
                  epsilon):
  """Return (rng_key, ε-greedy actions [K], max Q-values [K])."""
  rng_key, apply_key, explore_key, random_key = jax.random.split(rng_key, 4)
  q_values = network.apply(params, apply_key, observations).q_values
  chex.assert_rank(q_values, 2)
  num_streams, num_actions = q_values.shape
  greedy = jnp.argmax(q_values, axis=-1)
  random_actions = jax.random.randint(random_key, (num_streams,), 0,
                                      num_actions)
  explore = jax.random.uniform(explore_key, (num_streams,)) < epsilon
  actions = jnp.where(explore, random_actions, greedy).astype(jnp.int32)
  return rng_key, actions, jnp.max(q_values, axis=-1)


def td_target(network: hk.Transformed, additional_discount: float,
              target_params, transitions: replay_lib.Transitions, rng_key):
  """Return the TD target atoms [B, N] (target network, no double Q)."""
  target_out = network.apply(target_params, rng_key, transitions.s_t)
  batch = jnp.arange(target_out.q_atoms.shape[0])
  a_star = jnp.argmax(target_out.q_values, axis=-1)
  discount = additional_discount * transitions.discount_t
  target = (transitions.r_t[:, None] +
            discount[:, None] * target_out.q_atoms[batch, a_star])
  return jax.lax.stop_gradient(target)


def td_loss(network: hk.Transformed, loss_fn: LossFn,
            additional_discount: float, params, target_params,
            transitions: replay_lib.Transitions, rng_key, target=None):
  """Return the batch mean of the distributional TD loss.

  `target`: the batch's TD target atoms [B, N] when already computed (fused
  updates compute those of U batches in one pass); None: from target_params.
  """
  online_key, target_key = jax.random.split(rng_key)
  q_tm1 = network.apply(params, online_key, transitions.s_tm1).q_atoms
  if target is None:
    target = td_target(network, additional_discount, target_params,
                       transitions, target_key)
  batch = jnp.arange(q_tm1.shape[0])
  source = q_tm1[batch, transitions.a_tm1]                        # [B, N]
  chex.assert_equal_shape([source, target])
  per_transition = loss_fn(source, target)
  chex.assert_rank(per_transition, 1)
  return jnp.mean(per_transition)


def update(network: hk.Transformed, optimizer: optax.GradientTransformation,
           loss_fn: LossFn, additional_discount: float, grad_scale: float,
           params, target_params, opt_state,
           transitions: replay_lib.Transitions, rng_key, target=None):
  """Return (params, opt_state, rng_key, loss) after one Adam step.

  `target`: as td_loss's (None: computed here from target_params).
  """
  rng_key, loss_key = jax.random.split(rng_key)
  loss, grads = jax.value_and_grad(td_loss, argnums=3)(
      network, loss_fn, additional_discount, params, target_params,
      transitions, loss_key, target)
  if grad_scale != 1.0:  # NC-QR-DQN-0: QR gradient x 2/N, before clipping.
    grads = jax.tree.map(lambda g: g * grad_scale, grads)
  updates, opt_state = optimizer.update(grads, opt_state, params)
  params = optax.apply_updates(params, updates)
  return params, opt_state, rng_key, loss


def fused_update(update_fn, target_fn, params, target_params, opt_state,
                 transitions: replay_lib.Transitions, rng_key):
  """Return (params, opt_state, rng_key, losses [U]) after U updates in turn.

  The U updates share the target parameters, so the target network runs once
  on the U batches together (one batch of U x B: fewer, larger kernels); the
  online network, the gradients and Adam run U times in turn.

  Args:
    update_fn: `update` with its static arguments bound.
    target_fn: `td_target` with its static arguments bound.
    params: online parameters.
    target_params: target parameters (the same for the U updates).
    opt_state: optimizer state.
    transitions: U batches, every field [U, B, ...].
    rng_key: JAX key, threaded through the U updates as U calls would (the
      networks are deterministic: the target pass takes no key).
  """
  num_updates, batch_size = transitions.a_tm1.shape
  flat = jax.tree.map(
      lambda x: x.reshape((num_updates * batch_size,) + x.shape[2:]),
      transitions)
  targets = target_fn(target_params, flat, None)
  targets = targets.reshape((num_updates, batch_size) + targets.shape[1:])
  # A Python loop: straight-line code, as lax.scan fully unrolled. XLA's CPU
  # backend runs a while loop's body several times slower (the update inside
  # a one-trip lax.scan, which stays a loop, took 8-10x longer).
  losses_ = []
  for u in range(num_updates):
    batch = jax.tree.map(lambda x, u=u: x[u], transitions)
    params, opt_state, rng_key, loss = update_fn(
        params, target_params, opt_state, batch, rng_key, targets[u])
    losses_.append(loss)
  return params, opt_state, rng_key, jnp.stack(losses_)


def sample_and_update(update_fn, target_fn, sampler, num_updates: int,
                      batch_size: int, params, target_params, opt_state,
                      replay_arrays: device_replay.DeviceArrays, rng_key):
  """Sample U batches from the device replay, then run `fused_update`.

  Args:
    update_fn: `update` with its static arguments bound.
    target_fn: `td_target` with its static arguments bound.
    sampler: fn(arrays, rng_key, batch_size) -> (rng_key, Transitions), the
      device replay's `sampler`.
    num_updates: U.
    batch_size: B.
    params: online parameters.
    target_params: target parameters.
    opt_state: optimizer state.
    replay_arrays: the device replay's arrays.
    rng_key: JAX key.

  Returns:
    (params, opt_state, rng_key, losses [U]).
  """
  rng_key, transitions = sampler(replay_arrays, rng_key,
                                 num_updates * batch_size)
  transitions = jax.tree.map(
      lambda x: x.reshape((num_updates, batch_size) + x.shape[1:]),
      transitions)
  return fused_update(update_fn, target_fn, params, target_params, opt_state,
                      transitions, rng_key)


class AgentConfig(NamedTuple):
  batch_size: int = 32
  min_replay_size: int = 50_000          # Steps (transitions), all streams.
  learn_period: int = 16                 # Frames.
  target_network_update_period: int = 40_000  # Frames.
  num_action_repeats: int = 4            # Frames per agent step.
  additional_discount: float = 0.99
  max_abs_reward: float = 1.0
  grad_scale: float = 1.0
  eval_exploration_epsilon: float = 0.001
  num_fused_updates: int = 1             # U updates per learner dispatch.


class QuantileAgent:
  """ε-greedy quantile agent acting on K streams and learning from replay."""

  def __init__(
      self,
      network: hk.Transformed,
      loss_fn: LossFn,
      optimizer: optax.GradientTransformation,
      replay: replay_lib.FrameReplay,
      sample_observation: np.ndarray,
      exploration_epsilon: Callable[[int], float],
      config: AgentConfig,
      rng_key,
  ):
    """Initialise parameters and jit the pure functions.

    Args:
      network: hk.transform of fn(observations) -> QuantileNetworkOutputs.
      loss_fn: per-transition loss, [B, N], [B, N] -> [B].
      optimizer: optax transformation (see make_optimizer).
      replay: the replay the agent adds to and samples from; a
        DeviceFrameReplay is sampled inside the jitted update.
      sample_observation: one observation [H, W, S], for initialisation.
      exploration_epsilon: schedule, frame -> ε.
      config: counts (in frames) and constants.
      rng_key: JAX key; split into the train and eval acting keys.
    """
    if config.num_fused_updates < 1:
      raise ValueError('num_fused_updates must be >= 1, got '
                       f'{config.num_fused_updates}.')
    self._replay = replay
    self._exploration_epsilon = exploration_epsilon
    self._config = config
    self._on_device = isinstance(replay, device_replay.DeviceFrameReplay)
    init_key, self._rng_key, self._eval_rng_key = jax.random.split(rng_key, 3)
    # Jitted: Haiku's init run op by op compiles each of its ~80 ops apart
    # (tens of seconds on a loaded CPU); one jitted init compiles once.
    self._params = jax.jit(network.init)(init_key, sample_observation[None])
    self._target_params = _copy(self._params)
    self._opt_state = jax.jit(optimizer.init)(self._params)
    self._frame_t = 0
    self._num_updates = 0
    self._state_value_sum = 0.0
    self._state_value_count = 0
    self._last_loss = None
    self._num_pending = 0  # Updates due but not yet run (< U).

    # The one place where the pure functions are jitted. Donating params and
    # optimizer state lets XLA update them in place.
    self._select_action = jax.jit(functools.partial(select_action, network))
    learner_network = _on_stacks_first(network)
    update_fn = functools.partial(update, learner_network, optimizer, loss_fn,
                                  config.additional_discount,
                                  config.grad_scale)
    target_fn = functools.partial(td_target, learner_network,
                                  config.additional_discount)
    self._update = jax.jit(update_fn, donate_argnums=(0, 2))
    self._fused_update = jax.jit(
        functools.partial(fused_update, update_fn, target_fn),
        donate_argnums=(0, 2))
    # Device replay: one jitted call per U (and per single update, which
    # flushes pending updates before a target copy).
    self._device_updates = {
        u: jax.jit(functools.partial(sample_and_update, update_fn, target_fn,
                                     replay.sampler, u, config.batch_size),
                   donate_argnums=(0, 2))
        for u in {1, config.num_fused_updates}} if self._on_device else {}

  @property
  def frame_t(self) -> int:
    """Return the training frames seen (all streams)."""
    return self._frame_t

  @property
  def num_updates(self) -> int:
    return self._num_updates

  @property
  def num_pending_updates(self) -> int:
    """Return the updates due but not yet run (< num_fused_updates)."""
    return self._num_pending

  @property
  def last_loss(self):
    """Return the loss of the latest update (a device array), or None.

    With fused updates, the loss of the last of the U updates. Reading its
    value (float(...)) waits for that update: read it every few hundred
    updates, not every step.
    """
    if self._last_loss is not None and self._last_loss.ndim:
      return self._last_loss[-1]
    return self._last_loss

  @property
  def exploration_epsilon(self) -> float:
    return self._exploration_epsilon(self._frame_t)

  @property
  def online_params(self):
    return self._params

  @property
  def statistics(self) -> Dict[str, float]:
    """Return the mean max-Q of the states acted on since the last reset."""
    if not self._state_value_count:
      return {'state_value': float('nan')}
    return {'state_value': self._state_value_sum / self._state_value_count}

  def reset_statistics(self) -> None:
    self._state_value_sum, self._state_value_count = 0.0, 0

  def step(self, timestep: environment.BatchedTimeStep) -> np.ndarray:
    """Act on K streams (training), store the step, learn when due."""
    epsilon = self.exploration_epsilon
    self._rng_key, actions, values = self._select_action(
        self._params, self._rng_key, timestep.observation, epsilon)
    actions, values = jax.device_get((actions, values))
    self._state_value_sum += float(np.sum(values))
    self._state_value_count += values.shape[0]

    cfg = self._config
    reward = np.clip(timestep.reward, -cfg.max_abs_reward, cfg.max_abs_reward)
    self._replay.add(timestep.step_type, timestep.observation, actions, reward,
                     timestep.discount)

    previous_t = self._frame_t
    self._frame_t += cfg.num_action_repeats * actions.shape[0]
    if self._replay.size >= cfg.min_replay_size:
      self._num_pending += (self._frame_t // cfg.learn_period -
                            previous_t // cfg.learn_period)
      while self._num_pending >= cfg.num_fused_updates:
        self._dispatch(cfg.num_fused_updates)
      if (self._frame_t // cfg.target_network_update_period >
          previous_t // cfg.target_network_update_period):
        # The target copies every update due so far, whatever U.
        while self._num_pending:
          self._dispatch(1)
        self._target_params = _copy(self._params)
    return actions

  def eval_step(self, timestep: environment.BatchedTimeStep) -> np.ndarray:
    """Act on K streams with the online params and the eval ε; no learning."""
    self._eval_rng_key, actions, _ = self._select_action(
        self._params, self._eval_rng_key, timestep.observation,
        self._config.eval_exploration_epsilon)
    return jax.device_get(actions)

  def _dispatch(self, num_updates: int) -> None:
    """Run `num_updates` updates that were due (pending)."""
    self.learn(num_updates)
    self._num_pending -= num_updates

  def learn(self, num_updates: Optional[int] = None):
    """Dispatch U updates on batches from the replay; return their losses.

    One jitted call: with the host replay, U batches are sampled at once
    (`learn_from` for U = 1, `fused_update` above); with the device replay
    the call samples them itself. Returns at once (a future, as learn_from).

    Args:
      num_updates: 1 or the config's num_fused_updates (None: the latter).
    """
    num_updates = num_updates or self._config.num_fused_updates
    if num_updates not in (1, self._config.num_fused_updates):
      raise ValueError(f'learn: num_updates must be 1 or num_fused_updates='
                       f'{self._config.num_fused_updates}, got {num_updates}.')
    if self._on_device:
      if not self._num_updates:
        self._replay.check_sampleable()
      (self._params, self._opt_state, self._rng_key,
       losses_) = self._device_updates[num_updates](
           self._params, self._target_params, self._opt_state,
           self._replay.device_arrays, self._rng_key)
      self._num_updates += num_updates
      self._last_loss = losses_
      return losses_
    batch_size = self._config.batch_size
    transitions = self._replay.sample(num_updates * batch_size,
                                      stacks_last=False)
    if num_updates == 1:
      return self.learn_from(transitions)
    transitions = jax.tree.map(
        lambda x: x.reshape((num_updates, batch_size) + x.shape[1:]),
        transitions)
    self._params, self._opt_state, self._rng_key, losses_ = (
        self._fused_update(self._params, self._target_params,
                           self._opt_state, transitions, self._rng_key))
    self._num_updates += num_updates
    self._last_loss = losses_
    return losses_

  def learn_from(self, transitions: replay_lib.Transitions):
    """Dispatch one update on [B, S, H, W] stacks; return the loss (a future).

    JAX dispatches the update asynchronously: this returns at once, and the
    caller's next host work (stepping the environments, adding to and
    sampling the replay) runs while the update computes. The next action
    selection reads the updated parameters, so it waits for the update: the
    agent always acts with the parameters of every update run so far, as in
    DQN Zoo (no staleness with U = 1).
    """
    self._params, self._opt_state, self._rng_key, loss = self._update(
        self._params, self._target_params, self._opt_state, transitions,
        self._rng_key)
    self._num_updates += 1
    self._last_loss = loss
    return loss

  def get_state(self) -> Dict[str, Any]:
    """Return the learner state (host arrays), replay excluded."""
    return jax.device_get({
        'params': self._params,
        'target_params': self._target_params,
        'opt_state': self._opt_state,
        'rng_key': self._rng_key,
        'eval_rng_key': self._eval_rng_key,
        'frame_t': self._frame_t,
        'num_updates': self._num_updates,
        'num_pending_updates': self._num_pending,
    })

  def set_state(self, state: Dict[str, Any]) -> None:
    self._params = jax.device_put(state['params'])
    self._target_params = jax.device_put(state['target_params'])
    self._opt_state = jax.device_put(state['opt_state'])
    self._rng_key = jax.device_put(state['rng_key'])
    self._eval_rng_key = jax.device_put(state['eval_rng_key'])
    self._frame_t = int(state['frame_t'])
    self._num_updates = int(state['num_updates'])
    self._num_pending = int(state['num_pending_updates'])


def _on_stacks_first(network: hk.Transformed) -> hk.Transformed:
  """Return `network` taking [B, S, H, W] stacks, the replay's fast layout.

  numpy's strided transpose to [B, H, W, S] costs more than the rest of a
  replay sample; the device does it for almost nothing.
  """

  def apply(params, rng, observations):
    return network.apply(params, rng, jnp.moveaxis(observations, 1, -1))

  return hk.Transformed(network.init, apply)


def _copy(params):
  # A real copy: the online params are donated to (overwritten by) updates.
  return jax.tree.map(jnp.copy, params)
