"""Check and broadcast the atom arrays that the losses take."""

import jax
import jax.numpy as jnp
import numpy as np


def check_atoms(loss_name, source, target, same_size=False):
  """Return source and target as float arrays with broadcast leading dimensions.

  Raises a ValueError, at trace time, that names the shapes or dtypes when the
  atoms are not floating point, when an atom axis is empty, when the leading
  dimensions do not broadcast, or (with same_size) when the atom counts differ.
  16-bit floats are computed in float32.
  """
  source, target = jnp.asarray(source), jnp.asarray(target)
  for name, x in (('source', source), ('target', target)):
    if not jnp.issubdtype(x.dtype, jnp.floating):
      raise ValueError(
          f'{loss_name}: {name} atoms must be floating point, got dtype '
          f'{x.dtype} (source {source.dtype}, target {target.dtype}); cast '
          'them, e.g. with .astype(jnp.float32).')
    if x.ndim == 0 or x.shape[-1] == 0:
      raise ValueError(
          f'{loss_name}: {name} needs a non-empty last axis of atoms [..., N], '
          f'got shape {x.shape} (source {source.shape}, target {target.shape}).')
  if same_size and source.shape[-1] != target.shape[-1]:
    raise ValueError(
        f'{loss_name}: source and target need the same number of atoms, got '
        f'shapes {source.shape} and {target.shape}.')
  try:
    batch = np.broadcast_shapes(source.shape[:-1], target.shape[:-1])
  except ValueError:
    raise ValueError(
        f'{loss_name}: the leading dimensions of source {source.shape} and '
        f'target {target.shape} do not broadcast (atoms are the last axis).'
    ) from None
  dtype = jnp.promote_types(source.dtype, target.dtype)
  if jnp.finfo(dtype).bits < 32:
    dtype = jnp.float32
  source = jnp.broadcast_to(source.astype(dtype), batch + source.shape[-1:])
  target = jnp.broadcast_to(target.astype(dtype), batch + target.shape[-1:])
  return source, target


def _rows_finite(source, target):
  return jnp.all(jnp.isfinite(source), axis=-1) & jnp.all(
      jnp.isfinite(target), axis=-1)


@jax.custom_jvp
def nan_gradient_where_not_finite(source, target):
  """Return (source, target), whose gradients become NaN on non-finite rows.

  An identity whose derivative is NaN for a row (of the broadcast leading
  dimensions) holding a NaN or an infinite atom, so that no loss returns a
  finite, wrong gradient for such input. Pair with nan_where_not_finite.
  """
  return source, target


@nan_gradient_where_not_finite.defjvp
def _nan_gradient_where_not_finite_jvp(primals, tangents):
  source, target = primals
  mask = jnp.where(_rows_finite(source, target), 1.0, jnp.nan)[..., None]
  mask = mask.astype(source.dtype)
  return primals, (tangents[0] * mask, tangents[1] * mask)


def nan_where_not_finite(value, source, target):
  """Return value, NaN where a row of source or target holds NaN or inf."""
  return jnp.where(_rows_finite(source, target), value, jnp.nan)
