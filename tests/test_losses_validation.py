"""Tests of losses.validation: bad input is refused at trace time."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

import losses

_LOSSES = [losses.cramer_loss, losses.cramer_loss_pairwise,
           losses.quantile_regression_loss, losses.wasserstein1]


@pytest.mark.parametrize('loss', _LOSSES)
@pytest.mark.parametrize('source,target,message', [
    (np.zeros(3, np.int32), np.zeros(3, np.float32), r'floating point.*int32'),
    (np.zeros(3, np.float32), np.zeros(3, bool), r'floating point.*bool'),
    (np.zeros(0, np.float32), np.zeros(3, np.float32), r'non-empty.*\(0,\)'),
    (np.zeros((2, 3), np.float32), np.zeros((4, 0), np.float32), r'non-empty.*\(4, 0\)'),
    (np.float32(1.0), np.zeros(3, np.float32), r'non-empty.*\(\)'),
    (np.zeros((2, 3), np.float32), np.zeros((4, 3), np.float32),
     r'\(2, 3\).*\(4, 3\).*do not broadcast'),
])
def test_bad_input_is_a_value_error_at_trace_time(loss, source, target, message):
  with pytest.raises(ValueError, match=message):
    jax.jit(loss).trace(source, target)


@pytest.mark.parametrize('loss', _LOSSES)
def test_dtypes(loss):
  half = jax.jit(loss)(jnp.zeros(3, jnp.float16), jnp.ones(3, jnp.bfloat16))
  assert half.dtype == jnp.float32
  with jax.enable_x64(True):
    mixed = jax.jit(loss)(jnp.zeros(3, jnp.float32), jnp.ones(3, jnp.float64))
    assert mixed.dtype == jnp.float64
    assert float(mixed) > 0


def test_nan_gradient_guard_only_touches_non_finite_rows():
  from losses import validation  # pylint: disable=g-import-not-at-top
  source = jnp.array([[1.0, 2.0], [1.0, jnp.inf]])
  target = jnp.array([[0.0], [0.0]])
  def total(s, t):
    s, t = validation.nan_gradient_where_not_finite(s, t)
    return jnp.sum(s) + jnp.sum(t)
  grad_s, grad_t = jax.grad(total, (0, 1))(source, jnp.asarray(target))
  np.testing.assert_array_equal(grad_s[0], 1.0)
  np.testing.assert_array_equal(grad_t[0], 1.0)
  assert np.all(np.isnan(grad_s[1])) and np.all(np.isnan(grad_t[1]))
