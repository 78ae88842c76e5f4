"""Tests of losses.sampled_levels: the unbiased sampled Cramér loss and QR at levels."""

import functools
import itertools

import jax
import jax.numpy as jnp
from jax.scipy import stats
import numpy as np
import pytest
import rlax

from losses import cramer
from losses import quantile_regression
from losses import sampled_levels

_loss = jax.jit(sampled_levels.sampled_cramer_loss, static_argnums=2)
_grads = jax.jit(jax.grad(lambda s, t, keep: jnp.sum(
    sampled_levels.sampled_cramer_loss(s, t, keep)), argnums=(0, 1)),
                 static_argnums=2)


def _abs(u):
  # |u| with derivative 0 at 0 (the loss's convention on ties).
  return u * jax.lax.stop_gradient(jnp.sign(u))


def _pairwise_oracle(source, target, target_term=True):
  """Return the U-statistic by its O(N·M) pairs (autodiff gives the gradient)."""
  n, m = source.shape[-1], target.shape[-1]
  cross = jnp.sum(_abs(source[..., :, None] - target[..., None, :]),
                  axis=(-2, -1)) / (n * m)
  # The diagonal pairs are 0: summing all pairs is summing distinct ones.
  within_source = jnp.sum(_abs(source[..., :, None] - source[..., None, :]),
                          axis=(-2, -1)) / (2 * n * (n - 1))
  value = cross - within_source
  if target_term:
    value -= jnp.sum(_abs(target[..., :, None] - target[..., None, :]),
                     axis=(-2, -1)) / (2 * m * (m - 1))
  return value


def _numpy_oracle(source, target):
  """Return the U-statistic with explicit distinct pairs, float64 loops."""
  x, y = np.asarray(source, np.float64), np.asarray(target, np.float64)
  n, m = len(x), len(y)
  cross = sum(abs(a - b) for a in x for b in y) / (n * m)
  within_x = sum(abs(x[i] - x[k]) for i in range(n) for k in range(n)
                 if i != k) / (2 * n * (n - 1))
  within_y = sum(abs(y[j] - y[k]) for j in range(m) for k in range(m)
                 if j != k) / (2 * m * (m - 1))
  return cross - within_x - within_y


@functools.partial(jax.jit, static_argnums=2)
def _ours_and_oracle(source, target, target_term):
  """Return (value, gradients) of the loss and of the oracle, in one program."""
  oracle_grads = jax.grad(lambda s, t: jnp.sum(_pairwise_oracle(
      s, t, target_term)), argnums=(0, 1))(source, target)
  return ((_loss(source, target, target_term),
           _grads(source, target, target_term)),
          (_pairwise_oracle(source, target, target_term), oracle_grads))


@pytest.mark.parametrize('n,m,target_term', [(2, 2, True), (5, 7, False),
                                              (12, 12, True), (64, 33, False),
                                              (600, 40, True)])
def test_value_and_gradients_equal_the_pairwise_oracle(n, m, target_term):
  rng = np.random.default_rng(n * 1000 + m)
  source = jnp.asarray(rng.normal(size=(3, n)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(3, m)) + 0.3, jnp.float32)
  # One compiled program per case: the oracle run op by op compiles each of
  # its operations apart, at every shape.
  (value, grads), (oracle_value, oracle_grads) = _ours_and_oracle(
      source, target, target_term)
  np.testing.assert_allclose(value, oracle_value, rtol=2e-5, atol=2e-6)
  for ours, theirs in zip(grads, oracle_grads):
    np.testing.assert_allclose(ours, theirs, rtol=1e-5, atol=1e-7)


def test_value_equals_float64_loops_with_ties_and_n_not_m():
  source = np.array([0.5, -1.0, 0.5, 2.0, 0.0], np.float32)
  target = np.array([0.5, 3.0, -2.0, -2.0], np.float32)
  np.testing.assert_allclose(_loss(source, target, True),
                             _numpy_oracle(source, target), rtol=1e-6)


def test_gradients_equal_central_finite_differences():
  rng = np.random.default_rng(3)
  # Atoms at least 0.01 apart: the loss is linear within ±eps of them.
  atoms = rng.permutation(np.arange(17) * 0.05 - 0.4)
  eps = 1e-3
  with jax.enable_x64(True):
    source = jnp.asarray(atoms[:9], jnp.float64)
    target = jnp.asarray(atoms[9:], jnp.float64)
    loss = jax.jit(sampled_levels.sampled_cramer_loss)
    grad_source, grad_target = jax.grad(loss, argnums=(0, 1))(source, target)
    for which, grad, atoms_of in ((0, grad_source, source),
                                  (1, grad_target, target)):
      for i in range(atoms_of.shape[-1]):
        step = jnp.zeros_like(atoms_of).at[i].set(eps)
        if which == 0:
          diff = loss(source + step, target) - loss(source - step, target)
        else:
          diff = loss(source, target + step) - loss(source, target - step)
        np.testing.assert_allclose(float(grad[i]), float(diff) / (2 * eps),
                                   rtol=1e-9, atol=1e-12)


def test_gradient_is_the_empirical_level_gap_for_distinct_atoms():
  # ∂/∂x_i = (2/N)(F̂_target(x_i) − (rank_i − 1)/(N − 1)).
  source = jnp.array([0.3, -1.2, 2.5, 0.9])
  target = jnp.array([0.0, 1.0, 2.0, -3.0, 0.5, 4.0])
  grad, _ = _grads(source, target, True)
  rank = np.argsort(np.argsort(np.asarray(source))) + 1
  below = np.mean(np.asarray(target)[None, :] < np.asarray(source)[:, None], 1)
  np.testing.assert_allclose(grad, 2 / 4 * (below - (rank - 1) / 3),
                             rtol=1e-6)


def test_tied_atoms_get_equal_gradients_and_translation_is_free():
  source = jnp.array([1.0, 1.0, 1.0, 0.0])
  target = jnp.array([1.0, 2.0, 1.0])
  grad_source, grad_target = _grads(source, target, True)
  np.testing.assert_allclose(grad_source[:3], grad_source[0])
  np.testing.assert_allclose(np.asarray(grad_target)[[0, 2]], grad_target[0])
  # Translation invariance: the gradients sum to zero.
  np.testing.assert_allclose(jnp.sum(grad_source) + jnp.sum(grad_target), 0.0,
                             atol=1e-7)
  np.testing.assert_allclose(_loss(source + 1e4, target + 1e4, True),
                             _loss(source, target, True), atol=1e-6)


def test_leading_dimensions_broadcast_and_target_term_is_source_free():
  rng = np.random.default_rng(5)
  source = jnp.asarray(rng.normal(size=(2, 3, 6)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)
  full = _loss(source, target, True)
  assert full.shape == (2, 3)
  for a, b in itertools.product(range(2), range(3)):
    np.testing.assert_allclose(full[a, b], _loss(source[a, b], target[b], True),
                               rtol=1e-6)
  dropped = _loss(source, target, False)
  target_only = jnp.sum(jnp.abs(target[:, :, None] - target[:, None, :]),
                        axis=(-2, -1)) / (2 * 4 * 3)
  np.testing.assert_allclose(full, dropped - target_only, rtol=1e-5,
                             atol=1e-6)
  np.testing.assert_allclose(_grads(source, target, False)[0],
                             _grads(source, target, True)[0])


def test_non_finite_rows_give_nan_and_bad_sizes_are_refused():
  source = jnp.array([[0.0, 1.0], [jnp.nan, 1.0]])
  target = jnp.array([[0.5, 2.0], [0.5, 2.0]])
  value = _loss(source, target, True)
  assert np.isfinite(value[0]) and np.isnan(value[1])
  assert np.all(np.isnan(_grads(source, target, True)[0][1]))
  with pytest.raises(ValueError, match='N >= 2'):
    sampled_levels.sampled_cramer_loss(jnp.zeros(1), jnp.zeros(3))
  with pytest.raises(ValueError, match='target_term=False'):
    sampled_levels.sampled_cramer_loss(jnp.zeros(3), jnp.zeros(1))
  assert np.isfinite(_loss(jnp.array([0.0, 1.0]), jnp.zeros(1), False))


# Monte Carlo: unbiased value and gradient, against the plug-in's bias.

_N, _M, _REPLICATES = 8, 6, 4000
_MU, _SIGMA = 0.5, 1.5


def _true_distance(params):
  """Return ℓ2²(N(μ, σ²), N(0, 1)) = E|X − Y| − σ/√π − 1/√π in closed form."""
  mu, sigma = params
  s = jnp.sqrt(sigma**2 + 1.0)
  folded = (s * jnp.sqrt(2 / jnp.pi) * jnp.exp(-mu**2 / (2 * s**2)) +
            mu * (1 - 2 * stats.norm.cdf(-mu / s)))
  return folded - (sigma + 1.0) / jnp.sqrt(jnp.pi)


@jax.jit
def _monte_carlo(params):
  """Return per-replicate values and (μ, σ)-gradients of three estimators."""
  source_key, target_key = jax.random.split(jax.random.PRNGKey(20261127))
  z = jax.random.normal(source_key, (_REPLICATES, _N))
  target = jax.random.normal(target_key, (_REPLICATES, _M))

  def estimators(p, z_row, target_row):
    source = p[0] + p[1] * z_row
    return jnp.stack([
        sampled_levels.sampled_cramer_loss(source, target_row),
        sampled_levels.sampled_cramer_loss(source, target_row, False),
        cramer.cramer_loss(source, target_row)])

  values = jax.vmap(estimators, (None, 0, 0))(params, z, target)
  jacobians = jax.vmap(jax.jacrev(estimators), (None, 0, 0))(params, z, target)
  return values, jacobians  # [K, 3], [K, 3, 2]


def _mean_and_standard_error(samples):
  samples = np.asarray(samples, np.float64)
  return samples.mean(0), samples.std(0, ddof=1) / np.sqrt(samples.shape[0])


def test_expected_value_and_gradient_are_the_true_distance_but_not_plug_in():
  params = jnp.array([_MU, _SIGMA])
  true_value, true_grad = jax.jit(jax.value_and_grad(_true_distance))(params)
  true_value, true_grad = float(true_value), np.asarray(true_grad)
  values, jacobians = _monte_carlo(params)
  value_mean, value_se = _mean_and_standard_error(values)
  grad_mean, grad_se = _mean_and_standard_error(jacobians)
  # Unbiased: the full U-statistic, and without its target term up to
  # ½E|Y − Y'| = 1/√π, a constant of the network; the same gradient.
  constant = [0.0, 1 / np.sqrt(np.pi)]
  for k in (0, 1):
    assert abs(value_mean[k] - constant[k] - true_value) < 4 * value_se[k]
    np.testing.assert_array_less(np.abs(grad_mean[k] - true_grad),
                                 4 * grad_se[k])
  # Plug-in: biased by (1/2N)E|X − X'| + (1/2M)E|Y − Y'| = σ/(N√π) + 1/(M√π),
  # whose σ-gradient 1/(N√π) pushes σ down.
  value_bias = _SIGMA / (_N * np.sqrt(np.pi)) + 1 / (_M * np.sqrt(np.pi))
  grad_bias = np.array([0.0, 1 / (_N * np.sqrt(np.pi))])
  measured_value_bias = value_mean[2] - true_value
  measured_grad_bias = grad_mean[2] - true_grad
  assert abs(measured_value_bias - value_bias) < 4 * value_se[2]
  assert measured_value_bias > 10 * value_se[2]
  np.testing.assert_array_less(np.abs(measured_grad_bias - grad_bias),
                               4 * grad_se[2])
  assert measured_grad_bias[1] > 10 * grad_se[2][1]


# Quantile regression at given levels.

def _rlax_at_levels(source, target, levels, huber_param):
  loss = lambda s, t, tau: rlax.quantile_regression_loss(s, tau, t,
                                                         huber_param)
  return jax.vmap(loss)(source, target, levels)


@pytest.mark.parametrize('huber_param', [0.0, 1.0])
def test_quantile_regression_at_levels_equals_rlax(huber_param):
  rng = np.random.default_rng(7)
  source = jnp.asarray(rng.normal(size=(4, 9)))
  target = jnp.asarray(rng.normal(size=(4, 5)))
  levels = jnp.asarray(rng.uniform(size=(4, 9)))
  with jax.enable_x64(True):
    source, target, levels = (jnp.asarray(a, jnp.float64)
                              for a in (source, target, levels))
    ours_fn = lambda s: sampled_levels.sampled_quantile_regression_loss(
        s, target, levels, huber_param)
    theirs_fn = lambda s: _rlax_at_levels(s, target, levels, huber_param)
    # One program for both losses and their gradients (op by op, each of
    # their operations compiles apart).
    (ours, our_grad), (theirs, their_grad) = jax.jit(lambda s: [
        (f(s), jax.grad(lambda s: jnp.sum(f(s)))(s))
        for f in (ours_fn, theirs_fn)])(source)
    np.testing.assert_allclose(ours, theirs, rtol=1e-12)
    np.testing.assert_allclose(our_grad, their_grad, rtol=1e-12)


def test_quantile_regression_at_midpoints_is_the_fixed_level_loss():
  rng = np.random.default_rng(8)
  source = jnp.asarray(rng.normal(size=(2, 3, 12)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(3, 7)), jnp.float32)
  midpoints = (jnp.arange(12) + 0.5) / 12  # [N], broadcast over [2, 3].
  at_levels, fixed = jax.jit(lambda s, t: (
      sampled_levels.sampled_quantile_regression_loss(s, t, midpoints, 1.0),
      quantile_regression.quantile_regression_loss(s, t, 1.0)))(source, target)
  np.testing.assert_allclose(at_levels, fixed, rtol=1e-6)


def test_quantile_regression_at_levels_refuses_bad_levels():
  with pytest.raises(ValueError, match='one level per source atom'):
    sampled_levels.sampled_quantile_regression_loss(
        jnp.zeros((2, 4)), jnp.zeros((2, 3)), jnp.zeros((2, 3)))
  with pytest.raises(ValueError, match='huber_param'):
    sampled_levels.sampled_quantile_regression_loss(
        jnp.zeros(4), jnp.zeros(3), jnp.zeros(4), -1.0)
  with pytest.raises(ValueError, match='floating point'):
    sampled_levels.sampled_quantile_regression_loss(
        jnp.zeros(4), jnp.zeros(3), jnp.zeros(4, jnp.int32))


def test_quantile_regression_at_levels_takes_kappa_as_data():
  # The jitted loop passes κ as an array: one program for every κ.
  rng = np.random.default_rng(3)
  source = jnp.asarray(rng.normal(size=(3, 5)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(3, 4)), jnp.float32)
  levels = jnp.asarray(rng.uniform(size=(3, 5)), jnp.float32)
  loss = jax.jit(sampled_levels.sampled_quantile_regression_loss)
  for kappa in (0.0, 1.0):
    np.testing.assert_allclose(
        loss(source, target, levels, jnp.float32(kappa)),
        sampled_levels.sampled_quantile_regression_loss(source, target,
                                                        levels, kappa),
        rtol=1e-6)
