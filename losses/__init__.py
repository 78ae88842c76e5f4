"""Distributional losses between uniform staircase (quantile) distributions."""

import jax
import jax.numpy as jnp


def cramer_loss(source, target):
  """Return the squared Cramér distance between staircases (sort-based, first cut)."""
  n, m = source.shape[-1], target.shape[-1]
  batch = jnp.broadcast_shapes(source.shape[:-1], target.shape[:-1])
  source = jnp.broadcast_to(source, batch + (n,))
  target = jnp.broadcast_to(target, batch + (m,))
  atoms = jnp.concatenate([source, target], axis=-1)
  jumps = jnp.concatenate([jnp.full(batch + (n,), -m, jnp.int32),
                           jnp.full(batch + (m,), n, jnp.int32)], axis=-1)
  atoms, jumps = jax.lax.sort((atoms, jumps), dimension=-1, num_keys=1)
  running = jnp.cumsum(jumps, axis=-1)[..., :-1].astype(atoms.dtype)
  widths = jnp.diff(atoms, axis=-1)
  return jnp.sum(running**2 * widths, axis=-1) / (n * m) ** 2


def quantile_regression_loss(source, target, huber_param=0.0):
  """Return the (Huber) quantile regression loss, DQN Zoo / rlax convention."""
  n = source.shape[-1]
  tau = (jnp.arange(n, dtype=source.dtype) + 0.5) / n
  delta = target[..., None, :] - source[..., :, None]
  weight = jax.lax.stop_gradient(jnp.abs(tau[:, None] - (delta < 0)))
  abs_delta = jnp.abs(delta)
  if huber_param > 0:
    quadratic = jnp.minimum(abs_delta, huber_param)
    delta = 0.5 * quadratic**2 + huber_param * (abs_delta - quadratic)
  else:
    delta = abs_delta
  return jnp.sum(jnp.mean(weight * delta, axis=-1), axis=-1)


def wasserstein1(source, target):
  """Return the 1-Wasserstein distance between equal-size staircases."""
  return jnp.mean(jnp.abs(jnp.sort(source, -1) - jnp.sort(target, -1)), axis=-1)
