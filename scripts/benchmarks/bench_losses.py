r"""Benchmark the losses: median time of a jitted value-and-gradient.

For batch B and N = M atoms, times jax.jit(value_and_grad) of the batch mean
of each loss (gradient with respect to the source, target under
stop_gradient, as in a TD update): the variants of one N in turns, --repeats
rounds, each turn about 2 ms of calls. Prints the medians, the ratio to
rlax.quantile_regression_loss, and the temporary memory of the compiled
computation (XLA's memory_analysis). Also times the sort primitives that
explain the choice of algorithm. The last line, `figures:`, holds the
variants' figures as JSON.

  python -m scripts.benchmarks.bench_losses
  python -m scripts.benchmarks.bench_losses --sizes=32,201 --repeats=50 --batch=32

Variants (the formulations measured to choose cramer_loss's):
  cramer_loss            library, form='auto' (losses.cramer.auto_form picks)
  cramer_sorted_form     form='sorted': integer-key sorts, counts by search
  cramer_pairwise_form   form='pairwise': the O(N·M) energy identity
  cramer_binary_count    form='sorted' with binary-search counts at all sizes
  cramer_float_sort_vjp  one float sort of the 2N atoms, gradient by custom_vjp
  cramer_sort_autodiff   one float sort, autodiff through it (the first cut)
  cramer_loss_pairwise   O(N·M) energy identity, autodiff (test oracle)
  multiquadric_h0.1      losses.multiquadric_cramer_loss, width 0.1
  noisy_target_h0.1      losses.noisy_target_cramer_loss, width 0.1
  qr_loss                losses.quantile_regression_loss, κ = 0
  rlax_qr_loss           rlax.quantile_regression_loss, vmapped
"""

import functools
import sys

from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

import losses
from losses import sorting
from scripts.benchmarks import harness
from zoo.configuration import cli

try:
  import rlax  # pylint: disable=g-import-not-at-top
except ImportError:
  sys.exit("Error: rlax, the reference this benchmark compares with, is not "
           "installed: pip install -e '.[bench]'")

_SIZES = flags.DEFINE_list('sizes', ['32', '201', '1000', '4000', '16000'],
                           'Atom counts N = M.')
_BATCH = flags.DEFINE_integer('batch', 32, 'Rows per call.')
_MAX_PAIRWISE_GB = flags.DEFINE_float(
    'max_pairwise_gb', 2.0,
    'Memory cap for the O(N²) forms: above it they are timed on fewer rows '
    'and scaled to the batch, or skipped if one row does not fit.')
_SORTS = flags.DEFINE_bool('sorts', True, 'Also time the sort primitives.')


def _merged(source, target):
  """Return the 2N atoms and their CDF jumps (source -M, target N)."""
  n, m = source.shape[-1], target.shape[-1]
  return n, m, jnp.concatenate([source, target], axis=-1), jnp.concatenate(
      [jnp.full(source.shape, -m, jnp.int32),
       jnp.full(target.shape, n, jnp.int32)], axis=-1)


def _cramer_sort_autodiff(source, target):
  n, m, atoms, jumps = _merged(source, target)
  atoms, jumps = jax.lax.sort((atoms, jumps), dimension=atoms.ndim - 1,
                              num_keys=1)
  running = jnp.cumsum(jumps, axis=-1)[..., :-1].astype(atoms.dtype)
  return (jnp.sum(running**2 * jnp.diff(atoms, axis=-1), axis=-1) /
          (float(n) * m)**2)


@jax.custom_vjp
def _cramer_float_sort_vjp(source, target):
  return _float_sort_fwd(source, target)[0]


def _float_sort_fwd(source, target):
  n, m, atoms, jumps = _merged(source, target)
  index = jnp.broadcast_to(jnp.arange(n + m, dtype=jnp.int32), atoms.shape)
  atoms, jumps, index = jax.lax.sort((atoms, jumps, index),
                                     dimension=atoms.ndim - 1, num_keys=1)
  after = jnp.cumsum(jumps, axis=-1)
  before = after - jumps
  value = (jnp.sum(after[..., :-1].astype(atoms.dtype)**2 *
                   jnp.diff(atoms, axis=-1), axis=-1) / (float(n) * m)**2)
  # d/dz_k Σ r_k² (z_{k+1} − z_k) = r_{k−1}² − r_k².
  slope = (before.astype(atoms.dtype)**2 - after.astype(atoms.dtype)**2) / (
      float(n) * m)**2
  inverse = jnp.argsort(index, axis=-1)  # Unsort: a second, integer sort.
  return value, (jnp.take_along_axis(slope, inverse, axis=-1), n)


def _float_sort_bwd(residuals, cotangent):
  slope, n = residuals
  grad = cotangent[..., None] * slope
  return grad[..., :n], grad[..., n:]


_cramer_float_sort_vjp.defvjp(_float_sort_fwd, _float_sort_bwd)


def _cramer_binary_count(source, target):
  saved = sorting._BLOCKED_COUNT_MAX_KEYS  # pylint: disable=protected-access
  sorting._BLOCKED_COUNT_MAX_KEYS = 0  # pylint: disable=protected-access
  try:
    return losses.cramer_loss(source, target, form='sorted')
  finally:
    sorting._BLOCKED_COUNT_MAX_KEYS = saved  # pylint: disable=protected-access


def _noisy_target(source, target):
  # The key is derived from the data so that XLA cannot precompute the noise
  # (a constant key would fold the random draw into a constant).
  seed = jax.lax.bitcast_convert_type(target[..., 0, 0], jnp.uint32)
  key = jax.random.fold_in(jax.random.PRNGKey(0), seed)
  return losses.noisy_target_cramer_loss(key, source, target, 0.1)[1]


def _rlax_qr_loss(source, target):
  n = source.shape[-1]
  tau = (jnp.arange(n, dtype=source.dtype) + 0.5) / n
  return jax.vmap(rlax.quantile_regression_loss, (0, None, 0))(
      source, tau, target)


VARIANTS = (
    ('cramer_loss', losses.cramer_loss, False),
    ('cramer_sorted_form', functools.partial(losses.cramer_loss,
                                             form='sorted'), False),
    ('cramer_pairwise_form', functools.partial(losses.cramer_loss,
                                               form='pairwise'), True),
    ('cramer_binary_count', _cramer_binary_count, False),
    ('cramer_float_sort_vjp', _cramer_float_sort_vjp, False),
    ('cramer_sort_autodiff', _cramer_sort_autodiff, False),
    ('cramer_loss_pairwise', losses.cramer_loss_pairwise, True),
    ('multiquadric_h0.1', functools.partial(losses.multiquadric_cramer_loss,
                                            width=0.1), True),
    ('noisy_target_h0.1', _noisy_target, False),
    ('qr_loss', losses.quantile_regression_loss, True),
    ('rlax_qr_loss', _rlax_qr_loss, True),
)


def _value_and_grad(loss):
  def mean_loss(source, target):
    return jnp.mean(loss(source, jax.lax.stop_gradient(target)))
  return jax.jit(jax.value_and_grad(mean_loss))


def _turn(fn, args, turn_ms=2.0):
  """Return a variant's round: enough calls of fn(*args) to last about
  `turn_ms` (compiled first), in ms per call."""
  jax.block_until_ready(fn(*args))
  once_ms = harness.timed(lambda: fn(*args))()
  return harness.timed(lambda: fn(*args),
                       max(1, int(turn_ms / max(once_ms, 1e-3))))


def _temp_mb(fn, args):
  analysis = fn.lower(*args).compile().memory_analysis()
  if analysis is None:
    return float('nan')
  return analysis.temp_size_in_bytes / 2**20


def _check_against(reference, fn, args):
  value, grad = fn(*args)
  ref_value, ref_grad = reference(*args)
  scale = float(jnp.max(jnp.abs(ref_grad))) + 1e-30
  return (abs(float(value - ref_value)) / (abs(float(ref_value)) + 1e-30),
          float(jnp.max(jnp.abs(grad - ref_grad))) / scale)


def _time_sorts(batch, sizes, repeats):
  print(f'\nSort primitives, {batch} rows of 2N float32 (median ms):')
  rng = np.random.default_rng(0)
  rows = []
  for n in sizes:
    x = jnp.asarray(rng.normal(size=(batch, 2 * n)), jnp.float32)
    i = jnp.broadcast_to(jnp.arange(2 * n, dtype=jnp.int32), x.shape)
    x_np = np.asarray(x)
    ms = harness.medians(harness.measure({
        'lax.sort f32': _turn(jax.jit(
            lambda x: jax.lax.sort(x, dimension=1)), (x,)),
        '(f32, i32)': _turn(jax.jit(lambda x, i: jax.lax.sort(
            (x, i), dimension=1, num_keys=1)), (x, i)),
        '(f32, i32, i32)': _turn(jax.jit(lambda x, i: jax.lax.sort(
            (x, i, i), dimension=1, num_keys=1)), (x, i)),
        'int32 keys': _turn(jax.jit(lambda x: sorting.keys_to_floats(
            sorting.sort_keys(sorting.order_keys(x)), x.dtype)), (x,)),
        'numpy': harness.timed(lambda: np.sort(x_np, axis=1))}, repeats))
    rows.append([2 * n] + [f'{m[harness.VALUE]:.3f}' for m in ms.values()])
  harness.print_table(['2N'] + list(ms), rows, 'r' * 6)


def main(argv):
  del argv
  batch, repeats = _BATCH.value, flags.FLAGS.repeats
  sizes = [int(s) for s in _SIZES.value]
  print(f'jax {jax.__version__} on {jax.devices()[0].device_kind}; batch '
        f'{batch}, float32, median of {repeats}; jit(value_and_grad) of the '
        'batch mean, target under stop_gradient.')
  print('÷ rlax = time / rlax_qr_loss time; temp = XLA temporary buffers; '
        'err = relative difference from the sorted form (value, gradient).')
  rng = np.random.default_rng(0)
  figures = []
  columns = {'ms': ('ms', 'ms'), '÷ rlax': ('vs_rlax', 'x'),
             'temp MB': ('', ''), 'err value': ('', ''), 'err grad': ('', ''),
             'note': ('', '')}
  for n in sizes:
    source = jnp.asarray(rng.normal(size=(batch, n)), jnp.float32)
    target = jnp.asarray(rng.normal(size=(batch, n)), jnp.float32)
    args = (source, target)
    row_gb = 4 * n * n * 4 / 2**30  # Measured: ~4 float32 [N, N] per row.
    reference = _value_and_grad(functools.partial(losses.cramer_loss,
                                                  form='sorted'))
    variants, rows = {}, {}
    for name, loss, quadratic in VARIANTS:
      fn = _value_and_grad(loss)
      run_args, scale, note = args, 1.0, ''
      rows[name, n] = dict.fromkeys(columns, '-')
      if quadratic and batch * row_gb > _MAX_PAIRWISE_GB.value:
        # Time fewer rows and scale: the O(N²) work is linear in the batch.
        rows_fit = int(_MAX_PAIRWISE_GB.value // row_gb)
        if rows_fit < 1:
          rows[name, n]['note'] = (f'skipped: O(N²) memory '
                                   f'{batch * row_gb:.1f} GB')
          continue
        run_args = (source[:rows_fit], target[:rows_fit])
        scale = batch / rows_fit
        note = f'O(N²): timed on {rows_fit} rows, scaled ×{scale:g}'
      rows[name, n].update(
          {'temp MB': f'{scale * _temp_mb(fn, run_args):.1f}', 'note': note})
      if name.startswith('cramer') and not note:
        err = _check_against(reference, fn, args)
        rows[name, n].update(zip(('err value', 'err grad'),
                                 (f'{e:.1e}' for e in err)))
      turn = _turn(fn, run_args)
      variants[name] = lambda turn=turn, scale=scale: scale * turn()
    ms = harness.medians(harness.measure(variants, repeats))
    rlax_ms = ms.get('rlax_qr_loss', {}).get(harness.VALUE)
    for name, m in ms.items():
      rows[name, n]['ms'] = f'{m[harness.VALUE]:.3f}'
      if rlax_ms:
        rows[name, n]['÷ rlax'] = f'{m[harness.VALUE] / rlax_ms:.3f}'
    figures += harness.report(
        'losses.bench_losses', f'jit(value_and_grad) of the batch mean, '
        f'batch {batch}', ['variant', 'N = M'], columns, rows, 'lrrrrrrl')
  if _SORTS.value:
    _time_sorts(batch, sizes[:3], repeats)
  harness.print_figures(figures)


if __name__ == '__main__':
  harness.define_flags(repeats=30)
  cli.run(main)
