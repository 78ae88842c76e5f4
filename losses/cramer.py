"""Squared Cramér (l2) distance between uniform staircase distributions.

cramer_loss computes the distance in one of two exact forms, the faster for
the platform and the size (form='auto'):
- 'sorted', O((N + M) log(N + M)): the sort-based algorithm below, exact up
  to one rounding per atom.
- 'pairwise', O(N·M): the energy identity E|X − Y| − ½E|X − X'| − ½E|Y − Y'|
  (cramer_loss_pairwise), differentiated by autodiff. Its terms cancel, so
  for atoms far from zero the value's error is float rounding of their
  spread rather than of the distance; the gradient is a sum of ±1/(N·M),
  equal to the sorted form's to float rounding.

form='auto' takes the pairwise form while N·M is at most
PAIRWISE_MAX_ATOM_PAIRS of the platform, the sorted form above (timings:
scripts/bench_losses.py).

How the sorted form is computed, and why:
- Source and target are sorted apart, as integer keys (losses.sorting): an
  XLA sort of one integer operand is faster than of floats, and a
  multi-operand sort (atoms with their jumps) is slower still.
- Each sorted atom finds the next larger atom of the other distribution by a
  count (search), so the merged order is never built and no index travels
  through the sort.
- The gradient is written directly (custom_vjp) from the same counts, as exact
  integers: differentiating through the sort costs a second multi-operand
  sort, and in float32 the difference of squared running sums it forms loses
  ~1e-3 of the gradient at N = 4000.
"""

import jax
import jax.numpy as jnp

from losses import sorting
from losses import validation

FORMS = ('auto', 'sorted', 'pairwise')
# form='auto' computes the pairwise form while N·M is at most this, per
# platform, and the sorted form above (module docstring).
PAIRWISE_MAX_ATOM_PAIRS = {'cpu': 32 * 32, 'accelerator': 512 * 512}


def auto_form(platform, n, m):
  """Return the form cramer_loss(form='auto') computes on `platform`.

  Args:
    platform: 'cpu', or any other JAX platform ('cuda', 'rocm', 'tpu'), which
      all take the accelerator threshold.
    n: source atoms N.
    m: target atoms M.
  """
  limit = PAIRWISE_MAX_ATOM_PAIRS['cpu' if platform == 'cpu' else
                                  'accelerator']
  return 'pairwise' if n * m <= limit else 'sorted'


def cramer_loss(source, target, form='auto'):
  """Return the squared Cramér distance ∫(F_source − F_target)² dz.

  The sorted form: between consecutive sorted atoms, F_target − F_source is a
  running sum of the jumps (−1/N per source atom, +1/M per target atom),
  summed exactly as integers and divided once. The pairwise form: the energy
  identity, O(N·M) (cramer_loss_pairwise). 'auto' picks the faster for the
  platform the computation is compiled for and for N·M (auto_form;
  jax.lax.platform_dependent when the CPU and accelerators differ).

  Args:
    source: [..., N] atoms of a uniform staircase, in any order.
    target: [..., M] atoms (M may differ from N). Leading dimensions broadcast.
      Gradients flow into target too: wrap it in jax.lax.stop_gradient for a
      TD target.
    form: 'auto', 'sorted' or 'pairwise' (a Python string).

  Returns:
    [...] the squared distances, in the atoms' float dtype (float32 for 16-bit
    floats). NaN for a row holding a NaN or an infinite atom.

  The gradient, the same in both forms (to rounding): for an atom at z,
  ∂/∂source = 2 (F_target(z) − F_source(z)) / N and ∂/∂target the opposite
  over M, with each CDF taken halfway through its jump at z. Atoms that tie
  get the average of the left and right derivatives, so tied atoms get
  equal, finite gradients, and equal distributions get a zero gradient. The
  sorted form computes it directly from its integer counts, not through the
  sort: reverse mode only (jax.custom_vjp).
  """
  if form not in FORMS:
    raise ValueError(f'cramer_loss: form must be one of {FORMS}, got '
                     f'{form!r}.')
  source, target = validation.check_atoms('cramer_loss', source, target)
  source, target = validation.nan_gradient_where_not_finite(source, target)
  n, m = source.shape[-1], target.shape[-1]
  if form == 'auto':
    on_cpu, elsewhere = auto_form('cpu', n, m), auto_form('accelerator', n, m)
    if on_cpu == elsewhere:
      value = _FORM_FUNCTIONS[on_cpu](source, target)
    else:
      value = jax.lax.platform_dependent(
          source, target, cpu=_FORM_FUNCTIONS[on_cpu],
          default=_FORM_FUNCTIONS[elsewhere])
  else:
    value = _FORM_FUNCTIONS[form](source, target)
  return validation.nan_where_not_finite(value, source, target)


def _count_type(n, m):
  """Return an integer dtype that holds ±2NM, or None to count in floats."""
  if jax.config.jax_enable_x64:
    return jnp.int64
  return jnp.int32 if 2 * n * m < 2**31 else None


def _integer_combination(a, x, b, y, int_type, float_type):
  """Return a·x − b·y (x, y int32 counts), exactly when int_type allows."""
  if int_type is None:
    return a * x.astype(float_type) - b * y.astype(float_type)
  return (a * x.astype(int_type) - b * y.astype(int_type)).astype(float_type)


@jax.custom_vjp
def _cramer_sorted(source, target):
  return _cramer_sorted_fwd(source, target)[0]


def _cramer_sorted_fwd(source, target):
  n, m = source.shape[-1], target.shape[-1]
  dtype, int_type = source.dtype, _count_type(n, m)
  source_keys = sorting.order_keys(source)
  target_keys = sorting.order_keys(target)
  source_sorted_keys = sorting.sort_keys(source_keys)
  target_sorted_keys = sorting.sort_keys(target_keys)
  source_sorted = sorting.keys_to_floats(source_sorted_keys, dtype)
  target_sorted = sorting.keys_to_floats(target_sorted_keys, dtype)
  # Each atom owns the interval up to the next larger atom; on ties the
  # source atom comes first, so it counts targets < it and a target counts
  # sources <= it. The last atom owns [top, top).
  targets_below = sorting.count_less(target_sorted_keys, source_sorted_keys)
  sources_upto = sorting.count_less(source_sorted_keys, target_sorted_keys + 1)
  top = jnp.maximum(source_sorted[..., -1:], target_sorted[..., -1:])
  source_next = jnp.concatenate([source_sorted[..., 1:], top], axis=-1)
  target_next = jnp.concatenate([target_sorted[..., 1:], top], axis=-1)
  source_end = jnp.minimum(source_next, jnp.take_along_axis(
      jnp.concatenate([target_sorted, top], axis=-1), targets_below, axis=-1))
  target_end = jnp.minimum(target_next, jnp.take_along_axis(
      jnp.concatenate([source_sorted, top], axis=-1), sources_upto, axis=-1))
  # N·M·(F_target − F_source) on each atom's interval: integers.
  source_rank = jnp.arange(1, n + 1, dtype=jnp.int32)
  target_rank = jnp.arange(1, m + 1, dtype=jnp.int32)
  source_running = _integer_combination(
      n, targets_below, m, source_rank, int_type, dtype)
  target_running = _integer_combination(
      n, target_rank, m, sources_upto, int_type, dtype)
  total = (jnp.sum(source_running**2 * (source_end - source_sorted), axis=-1) +
           jnp.sum(target_running**2 * (target_end - target_sorted), axis=-1))
  value = total / (float(n) * float(m))**2
  residuals = (source_keys, target_keys, source_sorted_keys,
               target_sorted_keys)
  return value, residuals


def _midpoint_gap(keys, source_sorted_keys, target_sorted_keys):
  """Return N·(#t<z + #t≤z) − M·(#s<z + #s≤z), i.e. 2NM(F̄ − F) at each key."""
  n, m = source_sorted_keys.shape[-1], target_sorted_keys.shape[-1]
  queries = jnp.concatenate([keys, keys + 1], axis=-1)
  k = keys.shape[-1]
  target_counts = sorting.count_less(target_sorted_keys, queries)
  source_counts = sorting.count_less(source_sorted_keys, queries)
  return (target_counts[..., :k] + target_counts[..., k:],
          source_counts[..., :k] + source_counts[..., k:], n, m)


def _cramer_sorted_bwd(residuals, cotangent):
  source_keys, target_keys, source_sorted_keys, target_sorted_keys = residuals
  dtype = cotangent.dtype
  n, m = source_keys.shape[-1], target_keys.shape[-1]
  int_type = _count_type(n, m)
  grads = []
  for keys, scale in ((source_keys, 1.0 / (float(n)**2 * m)),
                      (target_keys, -1.0 / (float(n) * float(m)**2))):
    target_counts, source_counts, _, _ = _midpoint_gap(
        keys, source_sorted_keys, target_sorted_keys)
    gap = _integer_combination(n, target_counts, m, source_counts, int_type,
                               dtype)
    grads.append(cotangent[..., None] * (scale * gap))
  return tuple(grads)


_cramer_sorted.defvjp(_cramer_sorted_fwd, _cramer_sorted_bwd)


def _abs(u):
  # Zero derivative at 0 (jnp.abs has 1 there): the average of the one-sided
  # derivatives, which matches the sorted form's gradient on ties.
  return u * jax.lax.stop_gradient(jnp.sign(u))


def _cramer_pairwise(source, target):
  """Return E|X − Y| − ½E|X − X'| − ½E|Y − Y'| (autodiff gives the gradient)."""
  n, m = source.shape[-1], target.shape[-1]
  cross = _abs(source[..., :, None] - target[..., None, :])
  source_self = _abs(source[..., :, None] - source[..., None, :])
  target_self = _abs(target[..., :, None] - target[..., None, :])
  if n == m:
    # Term by term, so that equal distributions give exactly 0.
    return jnp.sum(cross - 0.5 * source_self - 0.5 * target_self,
                   axis=(-2, -1)) / n**2
  return (jnp.mean(cross, axis=(-2, -1)) -
          0.5 * jnp.mean(source_self, axis=(-2, -1)) -
          0.5 * jnp.mean(target_self, axis=(-2, -1)))


_FORM_FUNCTIONS = {'sorted': _cramer_sorted, 'pairwise': _cramer_pairwise}


def cramer_loss_pairwise(source, target):
  """Return the squared Cramér distance by the O(N·M) energy identity.

  ℓ2² = E|X − Y| − ½E|X − X'| − ½E|Y − Y'| for X ~ source, Y ~ target. The
  same value and gradient as cramer_loss (up to rounding: the terms cancel,
  so small distances between large atoms lose relative precision), with
  memory O(N·M + N² + M²) per row. Differentiated by autodiff (|·| with a zero
  derivative at 0). cramer_loss(form='pairwise') is this function; the tests
  use it to check the sorted form's value and gradient. Arguments and result
  as cramer_loss; gradients flow into target too.
  """
  source, target = validation.check_atoms('cramer_loss_pairwise', source,
                                          target)
  source, target = validation.nan_gradient_where_not_finite(source, target)
  value = _cramer_pairwise(source, target)
  return validation.nan_where_not_finite(value, source, target)
