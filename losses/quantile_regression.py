"""Quantile regression loss between staircases (DQN Zoo / rlax convention)."""

import numbers

import jax
import jax.numpy as jnp

from losses import validation


def quantile_regression_loss(source, target, huber_param=0.0):
  """Return the (Huber) quantile regression loss of source towards target.

  L = Σ_i (1/M) Σ_j |τ̂_i − 1[u_ij < 0]| · H_κ(u_ij), u_ij = target_j −
  source_i, at the source midpoints τ̂_i = (2i − 1)/(2N): a sum over source
  atoms and a mean over target atoms, with H_0(u) = |u| and, for κ > 0,
  H_κ(u) = u²/2 if |u| ≤ κ else κ(|u| − κ/2) (no division by κ). The weight is
  not differentiated. Equals rlax.quantile_regression_loss, batched.

  Args:
    source: [..., N] atoms, in quantile order (the loss is not invariant to
      permuting them).
    target: [..., M] atoms, any order. Leading dimensions broadcast. Gradients
      flow into target too (rlax stops them by default): wrap it in
      jax.lax.stop_gradient for a TD target.
    huber_param: κ >= 0: a Python number (the Huber or the plain loss chosen
      when traced, a negative one refused), or an array, scalar or
      broadcasting to the leading dimensions, that may be traced under jit
      or vmap: then data, not a constant of the compiled program, with the
      plain loss selected where κ <= 0 (jnp.where: branch-free, so that one
      program serves every κ). Both give the same values.

  Returns:
    [...] the losses; NaN for a row holding a NaN or an infinite atom.
  """
  static = isinstance(huber_param, numbers.Real)
  if static and not huber_param >= 0:
    raise ValueError(
        f'quantile_regression_loss: huber_param must be >= 0, got {huber_param}.')
  source, target = validation.check_atoms('quantile_regression_loss', source,
                                          target)
  source, target = validation.nan_gradient_where_not_finite(source, target)
  n = source.shape[-1]
  tau = (jnp.arange(n, dtype=source.dtype) + 0.5) / n
  return loss_at_levels(source, target, tau, huber_param)


def loss_at_levels(source, target, tau, huber_param):
  """Return the (Huber) QR loss of checked atoms at levels `tau`.

  Args:
    source: [..., N] atoms, checked (losses.validation) and NaN-guarded.
    target: [..., M] atoms, likewise.
    tau: [N] or [..., N] levels, in source's dtype; not differentiated.
    huber_param: κ >= 0, a Python number or an array (already checked); not
      differentiated.
  """
  kappa = jnp.asarray(huber_param, source.dtype)
  value = _loss(source, target, jax.lax.stop_gradient(tau),
                jax.lax.stop_gradient(kappa))
  return validation.nan_where_not_finite(value, source, target)


@jax.custom_jvp
def _loss(source, target, tau, kappa):
  """Return Σ_i (1/M) Σ_j w_ij H_κ(u_ij), differentiated in closed form."""
  return _value_and_slopes(source, target, tau, kappa)[0]


@_loss.defjvp
def _loss_jvp(primals, tangents):
  # dL = Σ_ij (c_ij / M) (dtarget_j − dsource_i), c = w · H_κ'(u): linear in
  # the tangents with [..., N] and [..., M] coefficients, so reverse mode
  # keeps no [..., N, M] array, unlike autodiff of the penalty (about 3×
  # the time of this on a CPU at N = M = 201, batch 32).
  value, slopes = _value_and_slopes(*primals)
  d_source, d_target = tangents[:2]  # τ and κ are not differentiated.
  m = primals[1].shape[-1]
  tangent = (jnp.sum(jnp.sum(slopes, axis=-2) / m * d_target, axis=-1) -
             jnp.sum(jnp.mean(slopes, axis=-1) * d_source, axis=-1))
  return value, tangent


def _value_and_slopes(source, target, tau, kappa):
  """Return the loss [...] and c_ij = w_ij H_κ'(u_ij) [..., N, M]."""
  delta = target[..., None, :] - source[..., :, None]
  weight = jnp.abs(tau[..., :, None] - (delta < 0).astype(source.dtype))
  kappa = kappa[..., None, None]
  abs_delta = jnp.abs(delta)
  # κ <= 0 selects the plain loss (jnp.where: one program serves every κ;
  # computing both penalties for a Python κ measured no slower on a CPU).
  penalty = jnp.where(kappa > 0, _huber(abs_delta, kappa), abs_delta)
  # d|u|/du is 1 at u = 0, as JAX's (and so rlax's) derivative of abs.
  slope = jnp.where(kappa > 0, jnp.clip(delta, -kappa, kappa),
                    jnp.where(delta >= 0, 1.0, -1.0).astype(source.dtype))
  value = jnp.sum(jnp.mean(weight * penalty, axis=-1), axis=-1)
  return value, weight * slope


def _huber(abs_delta, kappa):
  """Return H_κ(u) of |u| for κ > 0 (no division by κ)."""
  quadratic = jnp.minimum(abs_delta, kappa)
  return 0.5 * quadratic**2 + kappa * (abs_delta - quadratic)
