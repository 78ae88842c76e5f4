"""The quantile agent of the Python loop: acts on K streams, stores, learns.

Each step selects the K actions in one batched call, adds the K transitions
to a `zoo.replay.frame_replay.FrameReplay` and learns every `learn_period`
frames (summed over the streams) once the replay holds its minimum; the pure
functions of zoo.agent.learning are jitted in the constructor. How K streams
map onto the DQN Zoo protocol: docs/environments.md; the asynchronous learner
and its options (fused updates, the device replay, overlap_learning):
docs/agents.md and docs/performance.md.
"""

import functools
from typing import Any, Dict, Optional

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax

from zoo.agent import counts as counts_lib
from zoo.agent import learning
from zoo.environments import environment
from zoo.replay import device_replay
from zoo.replay import frame_replay as replay_lib


class QuantileAgent:
  """ε-greedy quantile agent acting on K streams and learning from replay."""

  def __init__(
      self,
      network: hk.Transformed,
      loss_fn: learning.LossFn,
      optimizer: optax.GradientTransformation,
      replay: replay_lib.FrameReplay,
      config: counts_lib.Counts,
      rng_key,
  ):
    """Initialise parameters and jit the pure functions.

    Args:
      network: hk.transform of fn(observations) -> QuantileNetworkOutputs,
        or a zoo.agent.learning.SampledLevelNetwork (IQN).
      loss_fn: per-transition loss, [B, N], [B, N] -> [B] (at sampled
        levels: [B, N], [B, M], levels [B, N] -> [B]).
      optimizer: optax transformation (see make_optimizer).
      replay: the replay; a DeviceFrameReplay is sampled inside the update.
      config: the run's counts (in frames) and constants.
      rng_key: JAX key; split into the train and eval acting keys.
    """
    if config.num_fused_updates < 1:
      raise ValueError('num_fused_updates must be >= 1, got '
                       f'{config.num_fused_updates}.')
    self._replay = replay
    self._config = config
    self._on_device = isinstance(replay, device_replay.DeviceFrameReplay)
    init_key, self._rng_key, self._eval_rng_key = jax.random.split(rng_key, 3)
    # Jitted: Haiku's init run op by op compiles each of its ~80 ops apart
    # (tens of seconds on a loaded CPU); one jitted init compiles once.
    self._params = jax.jit(network.init)(
        init_key, np.zeros((1,) + config.observation_shape, np.uint8))
    self._target_params = _copy(self._params)
    self._opt_state = jax.jit(optimizer.init)(self._params)
    self._frame_t = self._num_updates = self._num_pending = 0  # Pending < U.
    self._state_value_sum, self._state_value_count = 0.0, 0
    self._last_loss = None
    self._overlap = config.overlap_learning
    if self._overlap:
      # Acting's own key and parameters, so that it depends on no update.
      self._acting_device = _acting_device()
      self._rng_key, acting_key = jax.random.split(self._rng_key)
      self._acting_rng_key = jax.device_put(acting_key, self._acting_device)
      self._acting_params = jax.device_put(self._params, self._acting_device)

    # The one place where the pure functions are jitted. Donating params and
    # optimizer state lets XLA update them in place; with overlap the params
    # are not donated: the acting snapshot may still be that buffer.
    donated = (2,) if self._overlap else (0, 2)
    self._select_action = jax.jit(
        functools.partial(learning.select_action, network))
    learner_network = _on_stacks_first(network)
    update_fn = functools.partial(learning.update, learner_network,
                                  optimizer, loss_fn,
                                  config.additional_discount,
                                  config.grad_scale)
    target_fn = functools.partial(learning.td_target, learner_network,
                                  config.additional_discount)
    self._update = jax.jit(update_fn, donate_argnums=donated)
    sampled_levels = learning.samples_levels(network)
    self._fused_update = jax.jit(
        functools.partial(learning.fused_update, update_fn, target_fn,
                          sampled_levels=sampled_levels),
        donate_argnums=donated)
    # Device replay: one jitted call per U (and per single update, which
    # flushes pending updates before a target copy).
    self._device_updates = {
        u: jax.jit(functools.partial(learning.sample_and_update, update_fn,
                                     target_fn, replay.sampler, u,
                                     config.batch_size,
                                     sampled_levels=sampled_levels),
                   donate_argnums=donated)
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
    """Return the latest update's loss (a device array; the last of U), or None.

    Reading its value waits for that update: read it every few hundred updates.
    """
    if self._last_loss is not None and self._last_loss.ndim:
      return self._last_loss[-1]
    return self._last_loss

  @property
  def exploration_epsilon(self) -> float:
    return self._config.epsilon(self._frame_t)

  @property
  def online_params(self):
    return self._params

  @property
  def acting_params(self):
    """Return the parameters training acts with (overlap: the snapshot)."""
    return self._acting_params if self._overlap else self._params

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
    if self._overlap:
      self._acting_rng_key, actions, values = self._select_action(
          self._acting_params, self._acting_rng_key, timestep.observation,
          epsilon)
    else:
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
      copies_target = (self._frame_t // cfg.target_period >
                       previous_t // cfg.target_period)
      if self._overlap and (self._num_pending >= cfg.num_fused_updates or
                            (copies_target and self._num_pending)):
        # The snapshot of this block: the parameters before its updates.
        self._acting_params = jax.device_put(self._params,
                                             self._acting_device)
      while self._num_pending >= cfg.num_fused_updates:
        self._dispatch(cfg.num_fused_updates)
      if copies_target:
        # The target copies every update due so far, whatever U.
        while self._num_pending:
          self._dispatch(1)
        self._target_params = _copy(self._params)
    return actions

  def eval_step(self, timestep: environment.BatchedTimeStep) -> np.ndarray:
    """Act on K streams with the online params and the eval ε; no learning."""
    self._eval_rng_key, actions, _ = self._select_action(
        self._params, self._eval_rng_key, timestep.observation,
        self._config.eval_epsilon)
    return jax.device_get(actions)

  def _dispatch(self, num_updates: int) -> None:
    """Run `num_updates` updates that were due (pending)."""
    self.learn(num_updates)
    self._num_pending -= num_updates

  def learn(self, num_updates: Optional[int] = None):
    """Dispatch U updates on batches from the replay; return their losses.

    One jitted call, which returns at once (a future).

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
      return self._run_update(self._device_updates[num_updates],
                              self._replay.device_arrays, num_updates)
    transitions = self._replay.sample(num_updates * self._config.batch_size,
                                      stacks_last=False)
    if num_updates == 1:
      return self.learn_from(transitions)
    return self._run_update(
        self._fused_update, learning.split_updates(transitions, num_updates),
        num_updates)

  def learn_from(self, transitions: replay_lib.Transitions):
    """Dispatch one update on [B, S, H, W] stacks; return its loss (future)."""
    return self._run_update(self._update, transitions, 1)

  def _run_update(self, update, data, num_updates: int):
    """Run a jitted update on `data` (transitions or the device replay)."""
    self._params, self._opt_state, self._rng_key, loss = update(
        self._params, self._target_params, self._opt_state, data,
        self._rng_key)
    self._num_updates += num_updates
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
        **({'acting_params': self._acting_params,
            'acting_rng_key': self._acting_rng_key} if self._overlap else {}),
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
    if self._overlap:
      self._acting_params = jax.device_put(state['acting_params'],
                                           self._acting_device)
      self._acting_rng_key = jax.device_put(state['acting_rng_key'],
                                            self._acting_device)


def _on_stacks_first(network: hk.Transformed) -> hk.Transformed:
  """Return `network` taking [B, S, H, W] stacks, the replay's fast layout.

  numpy's strided transpose to [B, H, W, S] costs more than the rest of a
  replay sample; the device does it for almost nothing.
  """

  def apply(params, rng, observations, *levels):
    return network.apply(params, rng, jnp.moveaxis(observations, 1, -1),
                         *levels)

  # _replace keeps the kind (a SampledLevelNetwork's counts too).
  return network._replace(apply=apply)


def _acting_device():
  """Return the second local device of the default platform, else the first."""
  devices = jax.local_devices()
  return devices[1] if len(devices) > 1 else devices[0]


def _copy(params):
  # A real copy: the online params are donated to (overwritten by) updates.
  return jax.tree.map(jnp.copy, params)
