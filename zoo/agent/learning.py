"""The quantile agent's pure functions: acting, the TD target, loss and update.

A network at sampled levels (IQN) is a `SampledLevelNetwork`: each function
that calls it draws its levels from its own key, as DQN Zoo
(docs/sampled-levels.md). Both loops jit these functions, each in one place.
"""

import functools
import importlib
from typing import Callable, Dict, NamedTuple

import chex
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax

import losses
from zoo.agent import catalog
from zoo.replay import device_replay
from zoo.replay import frame_replay as replay_lib

# [B, N], [B, M] -> [B]; at sampled levels also the levels [B, N].
LossFn = Callable[..., jnp.ndarray]


class LevelCounts(NamedTuple):
  """Levels sampled per state for each use (DQN Zoo's tau_samples_*)."""
  policy: int   # Acting, and the TD target's greedy action.
  online: int   # The online atoms that the loss trains (s_tm1).
  target: int   # The TD target's atoms (s_t).


class SampledLevelNetwork(NamedTuple):
  """A network at sampled levels, with hk.Transformed's fields.

  apply(params, rng, observations, levels [B, N]) -> QuantileNetworkOutputs.
  """
  init: Callable
  apply: Callable
  counts: LevelCounts


def at_sampled_levels(network: hk.Transformed,
                      counts: LevelCounts) -> SampledLevelNetwork:
  """Return `network` (fn(observations, levels)) as a SampledLevelNetwork."""

  def init(rng, observations):
    levels = jnp.zeros((observations.shape[0], 1), jnp.float32)
    return network.init(rng, observations, levels)

  return SampledLevelNetwork(init, network.apply, counts)


def samples_levels(network) -> bool:
  """Return whether `network` takes sampled levels (a SampledLevelNetwork)."""
  return isinstance(network, SampledLevelNetwork)


def apply_at_sampled_levels(network: SampledLevelNetwork, params, rng_key,
                            observations, num_levels: int):
  """Return (outputs, levels [B, num_levels]), levels ~ U[0, 1) per state."""
  levels = jax.random.uniform(rng_key, (observations.shape[0], num_levels))
  return network.apply(params, None, observations, levels), levels


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


def relative_multiquadric_cramer_loss(source, target, smoothing_width):
  """Return the multiquadric Cramér loss of width h = c · E|X − X'|.

  c is `smoothing_width`; the spread's gradient is stopped.
  """
  spread = jax.lax.stop_gradient(losses.atom_spread(source))
  return losses.multiquadric_cramer_loss(source, target,
                                         smoothing_width * spread)


def sampled_cramer_loss(source, target, levels):
  """Return the unbiased sampled Cramér loss (target term kept)."""
  del levels  # The atoms are samples: their ranks stand for the levels.
  return losses.sampled_cramer_loss(source, target, target_term=True)


def make_loss_fn(loss: str, huber_param=1.0, **hyperparameters) -> LossFn:
  """Return the per-transition loss `loss` (a name of zoo.agent.catalog.LOSSES).

  Its declared hyperparameters take their given values, else their defaults;
  `huber_param` (QR's κ) may be an array (traced: data of the program).
  """
  declared = catalog.loss(loss)
  module, name = declared.function.rsplit('.', 1)
  function = getattr(importlib.import_module(module), name)
  given = dict(hyperparameters, huber_param=huber_param)
  values = {h.name: given.get(h.name, h.default)
            for h in declared.hyperparameters}
  return functools.partial(function, **values) if values else function


def loss_settings(s) -> Dict[str, float]:
  """Return the loss hyperparameters of settings `s` but κ."""
  return {name: value for name, value in catalog.values(s).items()
          if name != catalog.HUBER_PARAM.name}


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
  if samples_levels(network):  # The mean over the policy's levels.
    q_values = apply_at_sampled_levels(network, params, apply_key,
                                       observations,
                                       network.counts.policy)[0].q_values
  else:
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
  """Return the TD target atoms [B, N] (target network, no double Q).

  At sampled levels the greedy action is taken at the policy's levels and
  the atoms at the target count's: [B, M].
  """
  if samples_levels(network):
    selector_key, rng_key = jax.random.split(rng_key)
    selector = apply_at_sampled_levels(network, target_params, selector_key,
                                       transitions.s_t, network.counts.policy)
    target_out = apply_at_sampled_levels(network, target_params, rng_key,
                                         transitions.s_t,
                                         network.counts.target)[0]
    a_star = jnp.argmax(selector[0].q_values, axis=-1)
  else:
    target_out = network.apply(target_params, rng_key, transitions.s_t)
    a_star = jnp.argmax(target_out.q_values, axis=-1)
  batch = jnp.arange(target_out.q_atoms.shape[0])
  discount = additional_discount * transitions.discount_t
  target = (transitions.r_t[:, None] +
            discount[:, None] * target_out.q_atoms[batch, a_star])
  return jax.lax.stop_gradient(target)


def td_loss(network: hk.Transformed, loss_fn: LossFn,
            additional_discount: float, params, target_params,
            transitions: replay_lib.Transitions, rng_key, target=None):
  """Return the batch mean of the distributional TD loss.

  `target`: the batch's TD target atoms if already computed (None: from
  target_params).
  """
  online_key, target_key = jax.random.split(rng_key)
  if samples_levels(network):
    online_out, levels = apply_at_sampled_levels(
        network, params, online_key, transitions.s_tm1, network.counts.online)
    q_tm1 = online_out.q_atoms
  else:
    q_tm1 = network.apply(params, online_key, transitions.s_tm1).q_atoms
  if target is None:
    target = td_target(network, additional_discount, target_params,
                       transitions, target_key)
  batch = jnp.arange(q_tm1.shape[0])
  source = q_tm1[batch, transitions.a_tm1]                        # [B, N]
  if samples_levels(network):  # N online, M target samples.
    chex.assert_equal_shape_prefix([source, target, levels], 1)
    per_transition = loss_fn(source, target, levels)
  else:
    chex.assert_equal_shape([source, target])
    per_transition = loss_fn(source, target)
  chex.assert_rank(per_transition, 1)
  return jnp.mean(per_transition)


def update(network: hk.Transformed, optimizer: optax.GradientTransformation,
           loss_fn: LossFn, additional_discount: float, grad_scale: float,
           params, target_params, opt_state,
           transitions: replay_lib.Transitions, rng_key, target=None):
  """Return (params, opt_state, rng_key, loss) after one Adam step.

  `target`: as td_loss's.
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
                 transitions: replay_lib.Transitions, rng_key,
                 sampled_levels: bool = False):
  """Return (params, opt_state, rng_key, losses [U]) after U updates in turn.

  The target network runs once on the U batches together (fixed levels);
  the rest runs U times in turn (docs/performance.md).

  Args:
    update_fn: `update` with its static arguments bound.
    target_fn: `td_target` with its static arguments bound.
    params: online parameters.
    target_params: target parameters (the same for the U updates).
    opt_state: optimizer state.
    transitions: U batches, every field [U, B, ...].
    rng_key: JAX key, threaded through the U updates as U calls would.
    sampled_levels: the network samples its levels: each batch's target runs
      apart, with its update's key, so that U fused updates equal U single ones.
  """
  num_updates, batch_size = transitions.a_tm1.shape
  if sampled_levels:
    targets, key = [], rng_key
    for u in range(num_updates):
      key, loss_key = jax.random.split(key)       # As `update`,
      target_key = jax.random.split(loss_key)[1]  # then `td_loss`.
      targets.append(target_fn(
          target_params, jax.tree.map(lambda x, u=u: x[u], transitions),
          target_key))
    targets = jnp.stack(targets)
  else:
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
                      replay_arrays: device_replay.DeviceArrays, rng_key,
                      sampled_levels: bool = False):
  """Sample U batches of B from the device replay, then run `fused_update`.

  `sampler` is the device replay's fn(arrays, rng_key, n) -> (rng_key,
  Transitions); the other arguments are fused_update's. Returns its result.
  """
  rng_key, transitions = sampler(replay_arrays, rng_key,
                                 num_updates * batch_size)
  return fused_update(update_fn, target_fn, params, target_params, opt_state,
                      split_updates(transitions, num_updates), rng_key,
                      sampled_levels)


def split_updates(transitions: replay_lib.Transitions, num_updates: int):
  """Return U x B transitions, every field [U * B, ...], as [U, B, ...]."""
  return jax.tree.map(
      lambda x: x.reshape((num_updates, -1) + x.shape[1:]), transitions)
