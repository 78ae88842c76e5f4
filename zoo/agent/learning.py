"""The quantile agent's pure functions: acting, the TD target, loss and update.

The agents differ only by network head and loss (their presets,
zoo.configuration.agent_registry). `select_action`, `td_target`, `td_loss`, `update`,
`fused_update` and `sample_and_update` are pure module-level functions; the
Python loop's agent (zoo.agent.quantile_agent) and the jitted loop jit them,
each in one visible place. `make_loss_fn`, `make_optimizer` and the ε
schedule turn a run's settings into the learner's parts (zoo.loops.build).
"""

import functools
from typing import Callable, NamedTuple

import chex
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax

import losses
from zoo.replay import device_replay
from zoo.replay import frame_replay as replay_lib

LossFn = Callable[[jnp.ndarray, jnp.ndarray], jnp.ndarray]  # [B,N],[B,N]->[B]


class LinearSchedule(NamedTuple):
  """Linear schedule in frames, as DQN Zoo's (exploration epsilon)."""
  begin_value: float
  end_value: float
  begin_t: int
  decay_steps: int

  def __call__(self, t: int) -> float:
    return float(self.at(t))

  def at(self, t, xp=np):
    """Return the value at frame `t` (xp: numpy, or jax.numpy when traced)."""
    decay_steps = max(self.decay_steps, 1)
    frac = xp.clip(t - self.begin_t, 0, decay_steps) / decay_steps
    return (1 - frac) * self.begin_value + frac * self.end_value


def make_loss_fn(loss: str, huber_param: float = 1.0,
                 smoothing_width: float = 0.0) -> LossFn:
  """Return the per-transition loss between source and target atoms.

  huber_param: QR's κ, a Python float or an array (traced: data of the
  compiled program, losses.quantile_regression_loss); the Cramér losses
  ignore it.
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
