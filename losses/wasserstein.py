"""1-Wasserstein distance between equal-size staircases."""

import jax.numpy as jnp

from losses import validation


def wasserstein1(source, target):
  """Return W1 = (1/N) Σ_i |sort(source)_i − sort(target)_i|.

  Args:
    source: [..., N] atoms, any order.
    target: [..., N] atoms, any order. Leading dimensions broadcast. Gradients
      (through the sort) flow into both; as a loss its sample gradients are
      biased.

  Returns:
    [...] the distances; NaN for a row holding a NaN or an infinite atom.
  """
  source, target = validation.check_atoms('wasserstein1', source, target,
                                          same_size=True)
  source, target = validation.nan_gradient_where_not_finite(source, target)
  value = jnp.mean(
      jnp.abs(jnp.sort(source, axis=-1) - jnp.sort(target, axis=-1)), axis=-1)
  return validation.nan_where_not_finite(value, source, target)
