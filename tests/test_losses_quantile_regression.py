"""Tests of losses.quantile_regression: the QR loss and its link to Cramér."""

import hypothesis
from hypothesis import strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
import rlax

from losses import cramer
from losses import quantile_regression
from tests import losses_oracles as oracles

_SETTINGS = hypothesis.settings(max_examples=25, deadline=None,
                                derandomize=True, database=None)


_qr_jit = jax.jit(quantile_regression.quantile_regression_loss,
                  static_argnums=2)


def _qr(huber_param):
  return lambda s, t: _qr_jit(s, t, huber_param)


def _rlax_qr(source, target, huber_param):
  n = source.shape[-1]
  tau = (jnp.arange(n, dtype=source.dtype) + 0.5) / n
  loss = lambda s, t: rlax.quantile_regression_loss(s, tau, t, huber_param)
  return jax.vmap(loss)(source, target)


_KAPPAS = (0.0, 0.1, 1.0)


@jax.jit
def _ours_and_rlax(source, target):
  """Return, for each κ in _KAPPAS, (ours, rlax) values and source gradients.

  One program per shape, not one per κ and shape.
  """
  results = []
  for huber_param in _KAPPAS:
    ours = lambda s, k=huber_param: (
        quantile_regression.quantile_regression_loss(
            s, jax.lax.stop_gradient(target), k))
    theirs = lambda s, k=huber_param: _rlax_qr(s, target, k)
    results.append(tuple(
        (f(source), jax.grad(lambda s, f=f: jnp.sum(f(s)))(source))
        for f in (ours, theirs)))
  return results


_qr_jit_kappa_data = jax.jit(quantile_regression.quantile_regression_loss)
_qr_grad = jax.jit(jax.grad(quantile_regression.quantile_regression_loss))
_cramer_grad = jax.jit(jax.grad(cramer.cramer_loss))


@_SETTINGS
@hypothesis.given(n=st.sampled_from([1, 4, 12]), m=st.sampled_from([1, 3, 12]),
                  seed=st.integers(0, 2**31),
                  kind=st.sampled_from(('normal', 'grid', 'huge')))
def test_equals_rlax_and_numpy_values_and_source_gradients(n, m, seed, kind):
  rng = np.random.default_rng(seed)
  source = np.stack([oracles.random_atoms(rng, kind, n) for _ in range(3)])
  target = np.stack([oracles.random_atoms(rng, kind, m) for _ in range(3)])
  with jax.enable_x64(True):
    results = jax.device_get(_ours_and_rlax(jnp.asarray(source),
                                            jnp.asarray(target)))
  for huber_param, ((ours, our_grad), (theirs, their_grad)) in zip(_KAPPAS,
                                                                    results):
    np.testing.assert_allclose(ours, theirs, rtol=1e-12, atol=1e-300)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12, atol=1e-300)
    numpy = [oracles.quantile_regression_numpy(s, t, huber_param)
             for s, t in zip(source, target)]
    np.testing.assert_allclose(ours, numpy, rtol=1e-12, atol=1e-300)


def test_float32_matches_rlax_on_the_agents_shape():
  rng = np.random.default_rng(0)
  source = jnp.asarray(rng.normal(size=(32, 201)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(32, 201)), jnp.float32)
  for huber_param in (0.0, 1.0):
    np.testing.assert_allclose(_qr(huber_param)(source, target),
                               jax.jit(_rlax_qr, static_argnums=2)(
                                   source, target, huber_param), rtol=1e-5)


@hypothesis.settings(_SETTINGS, max_examples=15)
@hypothesis.given(n=st.sampled_from([2, 5, 12, 40]), seed=st.integers(0, 2**31))
def test_kappa0_gradient_is_n_over_2_times_cramer_gradient(n, seed):
  rng = np.random.default_rng(seed)
  source = np.sort(rng.normal(size=n))  # Sorted, distinct (almost surely).
  target = rng.normal(size=n)
  with jax.enable_x64(True):
    args = jnp.asarray(source), jnp.asarray(target)
    qr_grad = np.asarray(_qr_grad(*args))
    cramer_grad = np.asarray(_cramer_grad(*args))
  assert qr_grad.dtype == cramer_grad.dtype == np.float64
  np.testing.assert_allclose(qr_grad, n / 2 * cramer_grad, rtol=1e-12, atol=1e-15)


def test_huber_breaks_the_gradient_collinearity():
  rng = np.random.default_rng(1)
  n = 12
  source, target = np.sort(rng.normal(size=n)), rng.normal(size=n)
  with jax.enable_x64(True):
    args = jnp.asarray(source), jnp.asarray(target)
    cramer_grad = np.asarray(_cramer_grad(*args))
    for huber_param in (0.1, 1.0):
      qr_grad = np.asarray(jax.jit(jax.grad(
          lambda s, t: quantile_regression.quantile_regression_loss(
              s, t, huber_param)))(*args))
      # Not parallel: the best multiple of the Cramér gradient misses it.
      best = np.dot(qr_grad, cramer_grad) / np.dot(cramer_grad, cramer_grad)
      assert np.linalg.norm(qr_grad - best * cramer_grad) > 1e-2 * np.linalg.norm(qr_grad)


def test_not_invariant_to_permuting_source_atoms():
  source = jnp.array([-1.0, 0.0, 2.0])
  target = jnp.array([0.5, -0.5, 1.0])
  loss = _qr(0.0)
  assert loss(source, target) != loss(source[::-1], target)
  # Permuting the target atoms changes nothing (a mean over them).
  np.testing.assert_allclose(loss(source, target), loss(source, target[::-1]), rtol=1e-6)


def test_gradients_flow_into_target_unless_stopped():
  source, target = jnp.array([0.0, 1.0]), jnp.array([0.3, 2.0])
  loss = quantile_regression.quantile_regression_loss
  assert np.any(jax.jit(jax.grad(loss, 1))(source, target) != 0)
  stopped = lambda s, t: loss(s, jax.lax.stop_gradient(t))
  np.testing.assert_array_equal(jax.jit(jax.grad(stopped, 1))(source, target),
                                0.0)


def test_batch_shapes_broadcast_and_vmap():
  rng = np.random.default_rng(2)
  source = jnp.asarray(rng.normal(size=(2, 1, 5)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(3, 7)), jnp.float32)
  batched = _qr(1.0)(source, target)
  assert batched.shape == (2, 3)
  vmapped = jax.vmap(jax.vmap(_qr(1.0), (None, 0)), (0, None))(source[:, 0], target)
  np.testing.assert_allclose(batched, vmapped, rtol=1e-6)


@pytest.mark.parametrize('bad', [np.nan, np.inf])
def test_non_finite_atoms_give_nan(bad):
  source = jnp.array([[0.0, bad], [0.0, 1.0]])
  target = jnp.array([[0.0, 1.0], [0.0, 2.0]])
  values = _qr(0.0)(source, target)
  assert np.isnan(values[0]) and np.isfinite(values[1])
  grads = jax.jit(jax.grad(lambda s: _qr(0.0)(s, target).sum()))(source)
  assert np.all(np.isnan(grads[0])) and np.all(np.isfinite(grads[1]))


def test_negative_huber_param_is_an_error():
  with pytest.raises(ValueError, match='huber_param'):
    quantile_regression.quantile_regression_loss(jnp.zeros(3), jnp.zeros(3), -1.0)


@pytest.mark.parametrize('kappa', [0.0, 0.5, 1.0])
def test_array_kappa_equals_float_kappa(kappa):
  """κ as data (an array, traced): the Python float's values, gradients."""
  rng = np.random.default_rng(3)
  source = jnp.asarray(np.sort(rng.normal(size=(4, 6)), -1), jnp.float32)
  target = jnp.asarray(rng.normal(size=(4, 6)) * 2, jnp.float32)
  as_data = jax.jit(lambda s, t, k: jax.value_and_grad(
      lambda s: quantile_regression.quantile_regression_loss(s, t, k).sum())(s))
  as_float = jax.jit(lambda s, t: jax.value_and_grad(
      lambda s: quantile_regression.quantile_regression_loss(s, t, kappa).sum()
  )(s))
  for got, want in zip(as_data(source, target, jnp.float32(kappa)),
                       as_float(source, target)):
    np.testing.assert_array_equal(got, want)
  per_row = _qr_jit_kappa_data(source, target,
                               jnp.full((4,), kappa, jnp.float32))
  np.testing.assert_allclose(per_row, _qr(kappa)(source, target), rtol=1e-6)


def test_array_kappa_is_data_of_one_program():
  """One compiled program serves κ = 0 and κ = 1; vmap over a vector of κ."""
  source = jnp.zeros((2, 3), jnp.float32)
  target = jnp.ones((2, 3), jnp.float32)
  lowered = [jax.jit(quantile_regression.quantile_regression_loss).lower(
      source, target, jnp.float32(k)).as_text() for k in (0.0, 1.0)]
  assert lowered[0] == lowered[1]
  kappas = jnp.array([0.0, 0.5, 1.0], jnp.float32)
  vmapped = jax.jit(jax.vmap(quantile_regression.quantile_regression_loss,
                             (None, None, 0)))(source, target, kappas)
  assert vmapped.shape == (3, 2)
  for row, k in zip(vmapped, (0.0, 0.5, 1.0)):
    np.testing.assert_allclose(row, _qr(k)(source, target), rtol=1e-6)


def _qr_by_autodiff(source, target, huber_param):
  """The loss's definition, differentiated by JAX (the closed form's oracle)."""
  n = source.shape[-1]
  tau = (jnp.arange(n, dtype=source.dtype) + 0.5) / n
  delta = target[..., None, :] - source[..., :, None]
  weight = jax.lax.stop_gradient(jnp.abs(tau[:, None] - (delta < 0)))
  abs_delta = jnp.abs(delta)
  quadratic = jnp.minimum(abs_delta, huber_param)
  penalty = (0.5 * quadratic**2 + huber_param * (abs_delta - quadratic)
             if huber_param > 0 else abs_delta)
  return jnp.sum(jnp.mean(weight * penalty, axis=-1), axis=-1)


@pytest.mark.parametrize('huber_param', [0.0, 0.5, 1.0])
def test_closed_form_gradients_equal_autodiff_in_both_modes(huber_param):
  """Source and target gradients, reverse and forward mode, with ties."""
  rng = np.random.default_rng(4)
  source = np.round(rng.normal(size=(3, 7)), 1)  # Ties of u at 0 and ±κ.
  target = np.round(rng.normal(size=(3, 5)) * 2, 1)
  loss = lambda s, t: jnp.sum(
      quantile_regression.quantile_regression_loss(s, t, huber_param))
  oracle = lambda s, t: jnp.sum(_qr_by_autodiff(s, t, huber_param))
  with jax.enable_x64(True):
    args = jnp.asarray(source), jnp.asarray(target)
    for argnum in (0, 1):
      # Jitted: op by op, each operation of the oracle compiles apart.
      want = jax.jit(jax.grad(oracle, argnum))(*args)
      np.testing.assert_allclose(jax.jit(jax.grad(loss, argnum))(*args),
                                 want, rtol=1e-12, atol=1e-15)
      np.testing.assert_allclose(jax.jit(jax.jacfwd(loss, argnum))(*args),
                                 want, rtol=1e-12, atol=1e-15)
