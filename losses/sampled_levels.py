"""Losses for atoms at sampled quantile levels (IQN-style networks).

With levels τ drawn uniformly, a network's outputs at them are samples of its
return distribution, not the quantiles of a staircase. Two losses:

- sampled_cramer_loss: the squared Cramér distance between the source's and the
  target's distributions, estimated without bias from the samples: the
  U-statistic of the energy distance (half of it), E|X − Y| − ½E|X − X'| −
  ½E|Y − Y'| with distinct pairs only in the within-sample terms. Its value
  and gradients are unbiased; the plug-in estimate (losses.cramer_loss between
  the samples' empirical CDFs) is biased by (1/N)∫F(1 − F) + (1/M)∫G(1 − G),
  whose first term rewards narrow predictions. Computed by sorting, in
  O((N + M) log(N + M)) (derivation in the docs, "Sampled quantile levels").
- sampled_quantile_regression_loss: the (Huber) quantile regression loss at
  given levels, IQN's loss (rlax.quantile_regression_loss, batched).
"""

import numbers

import jax
import jax.numpy as jnp

from losses import quantile_regression
from losses import sorting
from losses import validation


def _sign_sums(keys, sorted_keys, count):
  """Return Σ_k sign(z − w_k) over the `count` sorted w, for each key z.

  #(w < z) − #(w > z) = #(w < z) + #(w ≤ z) − count: ties give 0, as the
  average of the one-sided derivatives of |z − w|.
  """
  k = keys.shape[-1]
  below = sorting.count_less(sorted_keys,
                             jnp.concatenate([keys, keys + 1], axis=-1))
  return below[..., :k] + below[..., k:] - count


def _sampled_cramer_gradients(source, target, target_term):
  """Return the loss's gradients in source [..., N] and target [..., M].

  The loss is positively homogeneous of degree 1 and piecewise linear, so its
  value is Σ source·∂source + Σ target·∂target (Euler): the gradients are all
  that is computed, from integer sign counts.
  """
  n, m = source.shape[-1], target.shape[-1]
  source_keys = sorting.order_keys(source)
  target_keys = sorting.order_keys(target)
  source_sorted = sorting.sort_keys(source_keys)
  target_sorted = sorting.sort_keys(target_keys)
  dtype = source.dtype
  # s_i = Σ_j sign(x_i − y_j), r_i = Σ_i' sign(x_i − x_i') (i' = i adds 0).
  cross_source = _sign_sums(source_keys, target_sorted, m).astype(dtype)
  within_source = _sign_sums(source_keys, source_sorted, n).astype(dtype)
  # t_j = Σ_i sign(x_i − y_j) = −Σ_i sign(y_j − x_i).
  cross_target = -_sign_sums(target_keys, source_sorted, n).astype(dtype)
  grad_source = (cross_source / (float(n) * m) -
                 within_source / (float(n) * (n - 1)))
  grad_target = -cross_target / (float(n) * m)
  if target_term:
    within_target = _sign_sums(target_keys, target_sorted, m).astype(dtype)
    grad_target = grad_target - within_target / (float(m) * (m - 1))
  return grad_source, grad_target


def _sampled_cramer_fwd(source, target, target_term):
  grad_source, grad_target = _sampled_cramer_gradients(source, target,
                                                       target_term)
  # The gradients sum to zero (translation invariance): centring changes
  # nothing but the rounding of atoms far from zero.
  center = 0.5 * (jnp.mean(source, axis=-1, keepdims=True) +
                  jnp.mean(target, axis=-1, keepdims=True))
  value = (jnp.sum((source - center) * grad_source, axis=-1) +
           jnp.sum((target - center) * grad_target, axis=-1))
  return value, (grad_source, grad_target)


def _sampled_cramer_bwd(target_term, residuals, cotangent):
  del target_term
  grad_source, grad_target = residuals
  return (cotangent[..., None] * grad_source,
          cotangent[..., None] * grad_target)


_sampled_cramer = jax.custom_vjp(
    lambda source, target, target_term: _sampled_cramer_fwd(
        source, target, target_term)[0], nondiff_argnums=(2,))
_sampled_cramer.defvjp(_sampled_cramer_fwd, _sampled_cramer_bwd)


def sampled_cramer_loss(source, target, target_term=True):
  """Return the unbiased estimate of the squared Cramér distance from samples.

  U = (1/NM) Σ_ij |x_i − y_j| − (1/(2N(N−1))) Σ_{i≠i'} |x_i − x_i'|
      − (1/(2M(M−1))) Σ_{j≠j'} |y_j − y_j'|,
  for x_i i.i.d. from the source distribution and y_j from the target's: its
  expectation is ℓ2²(source, target) = E|X − Y| − ½E|X − X'| − ½E|Y − Y'|
  (half the energy distance), and so is its gradient's, the expected
  gradient. A single value can be negative. Every sum is a sum of atoms
  weighted by integer sign counts from two sorts: O((N + M) log(N + M)).

  The last term does not depend on the source: target_term=False drops it
  (then the expectation is ℓ2² + ½E|Y − Y'|, the same source gradient, and
  M = 1 is allowed). The cross term only needs each y_j to be distributed as
  the target, so targets sharing one draw (the same transition) keep the
  source gradient unbiased.

  Args:
    source: [..., N] samples (the network's outputs at N uniformly sampled
      levels), any order, N >= 2.
    target: [..., M] samples, M >= 2 with target_term (M may differ from N).
      Leading dimensions broadcast. Gradients flow into target too: wrap it
      in jax.lax.stop_gradient for a TD target.
    target_term: keep the target-only term (a Python bool).

  Returns:
    [...] the estimates, in the atoms' float dtype (float32 for 16-bit
    floats); NaN for a row holding a NaN or an infinite atom.

  Gradient: ∂/∂x_i = (1/NM) Σ_j sign(x_i − y_j) − (1/(N(N−1))) Σ_i' sign(x_i −
  x_i') = (2/N)(F̂_target(x_i) − (rank_i − 1)/(N − 1)) for distinct atoms, with
  sign(0) = 0 (tied atoms get equal gradients); reverse mode only
  (jax.custom_vjp), from the integer counts, not through the sort.
  """
  source, target = validation.check_atoms('sampled_cramer_loss', source,
                                          target)
  n, m = source.shape[-1], target.shape[-1]
  if n < 2:
    raise ValueError(
        f'sampled_cramer_loss: the source needs N >= 2 samples to estimate '
        f'E|X − X\'| without bias, got shape {source.shape}; sample more '
        'levels.')
  if target_term and m < 2:
    raise ValueError(
        f'sampled_cramer_loss: the target term needs M >= 2 samples, got '
        f'shape {target.shape}; pass target_term=False (it does not depend '
        'on the source).')
  source, target = validation.nan_gradient_where_not_finite(source, target)
  value = _sampled_cramer(source, target, bool(target_term))
  return validation.nan_where_not_finite(value, source, target)


def sampled_quantile_regression_loss(source, target, levels, huber_param=0.0):
  """Return the (Huber) quantile regression loss of source at `levels`.

  L = Σ_i (1/M) Σ_j |τ_i − 1[u_ij < 0]| · H_κ(u_ij), u_ij = target_j −
  source_i: losses.quantile_regression_loss with the levels τ given rather
  than the midpoints (2i − 1)/(2N). IQN's loss (Dabney et al., 2018) with
  levels sampled uniformly; equals rlax.quantile_regression_loss, batched.
  Neither the levels nor the weight are differentiated.

  Args:
    source: [..., N] atoms, source_i the output at level τ_i.
    target: [..., M] atoms, any order. Leading dimensions broadcast. Gradients
      flow into target too: wrap it in jax.lax.stop_gradient for a TD target.
    levels: [..., N] levels τ in [0, 1], broadcasting to source's shape.
    huber_param: κ >= 0 (H_0(u) = |u|; for κ > 0, H_κ(u) = u²/2 if |u| <= κ
      else κ(|u| − κ/2), no division by κ): a Python number, or an array
      (traced: one program serves every κ, as quantile_regression_loss).

  Returns:
    [...] the losses; NaN for a row holding a NaN or an infinite atom.
  """
  static = isinstance(huber_param, numbers.Real)
  if static and not huber_param >= 0:
    raise ValueError(f'sampled_quantile_regression_loss: huber_param must be '
                     f'a number >= 0, got {huber_param!r}.')
  source, target = validation.check_atoms('sampled_quantile_regression_loss',
                                          source, target)
  levels = jnp.asarray(levels)
  if not jnp.issubdtype(levels.dtype, jnp.floating):
    raise ValueError(f'sampled_quantile_regression_loss: levels must be '
                     f'floating point, got dtype {levels.dtype}.')
  if levels.ndim == 0 or levels.shape[-1] != source.shape[-1]:
    raise ValueError(
        f'sampled_quantile_regression_loss: levels need one level per source '
        f'atom, got levels {levels.shape} for source {source.shape}.')
  try:
    batch = jnp.broadcast_shapes(source.shape[:-1], levels.shape[:-1])
  except ValueError:
    raise ValueError(
        f'sampled_quantile_regression_loss: the leading dimensions of levels '
        f'{levels.shape} and source {source.shape} do not broadcast.') from None
  n, m = source.shape[-1], target.shape[-1]
  source = jnp.broadcast_to(source, batch + (n,))
  target = jnp.broadcast_to(target, batch + (m,))
  tau = jax.lax.stop_gradient(
      jnp.broadcast_to(levels.astype(source.dtype), batch + (n,)))
  source, target = validation.nan_gradient_where_not_finite(source, target)
  return quantile_regression.loss_at_levels(source, target, tau, huber_param)
