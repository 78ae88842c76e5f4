"""Smoothed Cramér losses: two ways to round the kinks of the Cramér loss.

Both take a smoothing width h >= 0 (a Python float or an array that broadcasts
to the leading dimensions [...]) and tend to losses.cramer_loss as h -> 0.

- multiquadric_cramer_loss, deterministic, O(N·M): the energy form of the
  Cramér distance with |x − y| replaced by the conditionally negative-definite
  k_h(u) = sqrt(u² + h²) − h. Since sqrt(u² + h²) = E|u + W| for W with density
  h² / (2 (w² + h²)^{3/2}), the loss is ∫ ΔF · (g_h * ΔF), ΔF = F_source −
  F_target: the Cramér distance seen through a smoothing of both CDFs.
  0 <= cramer_loss − this <= h.
- noisy_target_cramer_loss, randomised, O((N + M) log(N + M)): the exact
  cramer_loss to the target atoms plus independent noise of scale h. Its
  expectation over the noise is the Cramér distance to the target convolved
  with the noise, plus a term free of the source, so its source gradients are
  unbiased for that smoothed distance.

atom_spread(atoms) = E|X − X'| of a staircase, the scale to make h relative
(h = c · stop_gradient(atom_spread(source))): then the losses are
scale-equivariant. The derivations, the bias of each minimiser as a function
of h and of the distribution's scale, and the synthetic experiment are in the
docs ("A smoothed Cramér loss").
"""

import jax
import jax.numpy as jnp
import numpy as np

from losses import cramer
from losses import validation

NOISES = ('normal', 'uniform')


def _check_width(loss_name, width, dtype):
  """Return width as an array of dtype; refuse a negative Python number."""
  if isinstance(width, (int, float, np.floating, np.integer)):
    if not width >= 0:
      raise ValueError(f'{loss_name}: width must be >= 0, got {width}.')
  return jnp.asarray(width, dtype)


def _multiquadric_terms(u, width):
  """Return k_h(u) = √(u²+h²) − h, ∂k/∂u and ∂k/∂h, from one square root.

  k_h(u) is taken as u² / (r + h), r = √(u² + h²): no cancellation at small
  u. Where r = 0 (u = h = 0) k is 0 and both derivatives are taken as 0 (the
  subgradient of |u| at 0), so gradients stay finite at h = 0.
  """
  r = jnp.sqrt(u * u + width * width)
  positive = r > 0
  safe_r = jnp.where(positive, r, 1.0)
  value = jnp.where(positive, u * u / (safe_r + width), 0.0)
  d_u = jnp.where(positive, u / safe_r, 0.0)
  d_width = jnp.where(positive, width / safe_r - 1.0, 0.0)
  return value, d_u, d_width


def _multiquadric_energy_and_grads(source, target, width):
  """Return the energy and its gradients in source, target and width.

  Written out, since k_h is odd in u and its derivatives share the square
  root: about 20 times faster than autodiff through the kernel on the CPU.
  """
  n, m = source.shape[-1], target.shape[-1]
  h = width[..., None, None]
  cross, d_cross, h_cross = _multiquadric_terms(
      source[..., :, None] - target[..., None, :], h)
  source_self, d_source, h_source = _multiquadric_terms(
      source[..., :, None] - source[..., None, :], h)
  target_self, d_target, h_target = _multiquadric_terms(
      target[..., :, None] - target[..., None, :], h)
  if n == m:
    # Term by term, so that equal distributions give exactly 0.
    value = jnp.sum(cross - 0.5 * source_self - 0.5 * target_self,
                    axis=(-2, -1)) / n**2
  else:
    value = (jnp.mean(cross, axis=(-2, -1)) -
             0.5 * jnp.mean(source_self, axis=(-2, -1)) -
             0.5 * jnp.mean(target_self, axis=(-2, -1)))
  # k' is odd: each self pair appears twice with opposite signs.
  grad_source = (jnp.sum(d_cross, axis=-1) / (n * m) -
                 jnp.sum(d_source, axis=-1) / n**2)
  grad_target = (-jnp.sum(d_cross, axis=-2) / (n * m) -
                 jnp.sum(d_target, axis=-1) / m**2)
  grad_width = (jnp.mean(h_cross, axis=(-2, -1)) -
                0.5 * jnp.mean(h_source, axis=(-2, -1)) -
                0.5 * jnp.mean(h_target, axis=(-2, -1)))
  return value, (grad_source, grad_target, grad_width)


@jax.custom_vjp
def _multiquadric_energy(source, target, width):
  """Return the energy; source, target and width share leading dims."""
  return _multiquadric_energy_and_grads(source, target, width)[0]


def _multiquadric_energy_bwd(grads, cotangent):
  grad_source, grad_target, grad_width = grads
  return (cotangent[..., None] * grad_source,
          cotangent[..., None] * grad_target, cotangent * grad_width)


_multiquadric_energy.defvjp(_multiquadric_energy_and_grads,
                            _multiquadric_energy_bwd)


def multiquadric_cramer_loss(source, target, width):
  """Return E k_h(X − Y) − ½E k_h(X − X') − ½E k_h(Y − Y'), k_h = √(u²+h²) − h.

  The energy form of the squared Cramér distance (cramer_loss_pairwise) with
  the smooth kernel k_h in place of |u|: a distance (>= 0, 0 only for equal
  distributions), below cramer_loss by at most h (by about h (1/N + 1/M) / 2
  for small h and distinct atoms) and equal to it at h = 0. Its
  gradient in a source atom z is 2 (G_target(z) − G_source(z)) / N with G the
  CDFs convolved with g_h(w) = h² / (2 (w² + h²)^{3/2}): continuous in z, so
  the loss is smooth in the atoms. Scale: k_h(s·u) = s·k_{h/s}(u), so what h
  does depends on h / scale; pass a relative width (atom_spread) to remove it.

  Args:
    source: [..., N] atoms, any order.
    target: [..., M] atoms. Leading dimensions broadcast. Gradients flow into
      target too: wrap it in jax.lax.stop_gradient for a TD target.
    width: h >= 0, a Python float or an array broadcasting to [...] (a traced
      width is not checked for sign). Gradients do not flow into it usefully:
      stop them if it is computed from the atoms.

  Returns:
    [...] the losses, in the atoms' float dtype (float32 for 16-bit floats);
    NaN for a row holding a NaN or an infinite atom. O(N·M + N² + M²) memory
    per row.
  """
  source, target = validation.check_atoms('multiquadric_cramer_loss', source,
                                          target)
  width = _check_width('multiquadric_cramer_loss', width, source.dtype)
  source, target = validation.nan_gradient_where_not_finite(source, target)
  lead = jnp.broadcast_shapes(source.shape[:-1], target.shape[:-1],
                              jnp.shape(width))
  value = _multiquadric_energy(
      jnp.broadcast_to(source, lead + source.shape[-1:]),
      jnp.broadcast_to(target, lead + target.shape[-1:]),
      jnp.broadcast_to(width, lead))
  return validation.nan_where_not_finite(value, source, target)


def noisy_target_cramer_loss(rng_key, source, target, width, noise='normal',
                             form='auto'):
  """Return (rng_key, cramer_loss(source, target + h·ε)), ε drawn per atom.

  ε ~ N(0, 1) (noise='normal') or U(−1, 1) ('uniform'), independent over the
  target's atoms and rows. Over ε, the expected loss is ℓ2²(source, ν_h) +
  ∫ Var(F̂_target+hε), where ν_h is the target staircase convolved with the
  noise of scale h; the second term does not depend on the source, so the
  source gradient is an unbiased sample of ∇ℓ2²(source, ν_h), and its
  minimiser over staircases is ν_h's midpoint quantiles F_{ν_h}⁻¹(τ̂_i).
  |loss − cramer_loss(source, target)| <= 2 · mean_j |h ε_j|.

  Args:
    rng_key: a JAX PRNG key; split, the first half returned.
    source: [..., N] atoms, any order.
    target: [..., M] atoms. Leading dimensions broadcast. Gradients flow into
      target too (the noise is additive).
    width: h >= 0, a Python float or an array broadcasting to [...].
    noise: 'normal' or 'uniform' (a Python string).
    form: cramer_loss's form (a Python string).

  Returns:
    (rng_key, [...] the losses), dtype as cramer_loss; NaN for a row holding
    a NaN or an infinite atom.
  """
  if noise not in NOISES:
    raise ValueError(f'noisy_target_cramer_loss: noise must be one of '
                     f'{NOISES}, got {noise!r}.')
  source, target = validation.check_atoms('noisy_target_cramer_loss', source,
                                          target)
  width = _check_width('noisy_target_cramer_loss', width, source.dtype)
  width = jnp.broadcast_to(width, source.shape[:-1])
  rng_key, noise_key = jax.random.split(rng_key)
  if noise == 'normal':
    epsilon = jax.random.normal(noise_key, target.shape, target.dtype)
  else:
    epsilon = jax.random.uniform(noise_key, target.shape, target.dtype,
                                 -1.0, 1.0)
  noisy = target + jax.lax.stop_gradient(width)[..., None] * epsilon
  return rng_key, cramer.cramer_loss(source, noisy, form=form)


def atom_spread(atoms):
  """Return E|X − X'| of the uniform staircase on atoms [..., N] -> [...].

  The mean absolute difference (Gini), O(N log N) by sorting: (2/N²) Σ_i
  (2i − N − 1) x_(i). Scale-equivariant and translation-invariant: h = c ·
  stop_gradient(atom_spread(source)) makes the smoothed losses scale-free.
  Differentiable (through the sort); stop its gradient when used as a width.
  """
  atoms = jnp.asarray(atoms)
  if not jnp.issubdtype(atoms.dtype, jnp.floating):
    raise ValueError(f'atom_spread: atoms must be floating point, got '
                     f'{atoms.dtype}.')
  if atoms.ndim == 0 or atoms.shape[-1] == 0:
    raise ValueError(f'atom_spread: needs atoms [..., N], got shape '
                     f'{atoms.shape}.')
  n = atoms.shape[-1]
  weights = (2 * jnp.arange(1, n + 1) - n - 1).astype(atoms.dtype)
  return 2 * jnp.sum(weights * jnp.sort(atoms, axis=-1), axis=-1) / n**2
