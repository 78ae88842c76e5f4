"""Tests of losses.smoothed_cramer: the multiquadric and noisy-target losses."""

import functools

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate
from scipy import special
from scipy import stats

from losses import cramer
from losses import smoothed_cramer as sc
from tests import losses_oracles as oracles

_multiquadric = jax.jit(sc.multiquadric_cramer_loss)


def _multiquadric_numpy(source, target, h):
  """The energy form with √(u² + h²) − h, float64 numpy, written directly."""
  k = lambda u: np.sqrt(u**2 + h**2) - h
  source, target = np.asarray(source, np.float64), np.asarray(target, np.float64)
  return float(np.mean(k(source[:, None] - target[None, :])) -
               0.5 * np.mean(k(source[:, None] - source[None, :])) -
               0.5 * np.mean(k(target[:, None] - target[None, :])))


def _multiquadric_spectral(source, target, h):
  """(1/π) ∫_0^∞ |φ_s(ω) − φ_t(ω)|² · hωK₁(hω) / ω² dω, by quadrature.

  The spectral form of the derivation (|u| has weight 1/(πω²) and √(u²+h²)
  the weight damped by hωK₁(hω)): independent of the pairwise formula.
  """
  source, target = np.asarray(source), np.asarray(target)

  def integrand(w):
    diff = (np.mean(np.exp(1j * w * source)) - np.mean(np.exp(1j * w * target)))
    damping = h * w * special.k1(h * w) if w > 0 else 1.0
    if w < 1e-8:  # |Δφ|²/ω² -> (Δ mean)² + ...; the limit at 0.
      return (np.mean(source) - np.mean(target))**2
    return abs(diff)**2 * damping / w**2

  total = 0.0
  edges = [0.0, 1.0, 10.0, 100.0, np.inf]
  for a, b in zip(edges[:-1], edges[1:]):
    total += integrate.quad(integrand, a, b, limit=2000, epsabs=1e-11,
                            epsrel=1e-9)[0]
  return total / np.pi


def test_multiquadric_kernel_is_the_mean_distance_to_a_t2_shifted_point():
  # √(u² + h²) = E|u + W|, W with density h² / (2 (w² + h²)^{3/2}).
  h = 0.7
  density = lambda w: h**2 / (2 * (w**2 + h**2)**1.5)
  assert integrate.quad(density, -np.inf, np.inf)[0] == pytest.approx(1.0)
  for u in (0.0, 0.3, -2.0, 10.0):
    mean_abs = integrate.quad(lambda w: abs(u + w) * density(w), -np.inf,
                              np.inf, points=None, limit=500)[0]
    assert mean_abs == pytest.approx(np.sqrt(u**2 + h**2), rel=1e-7)


@pytest.mark.parametrize('kind', ('normal', 'grid', 'offset', 'constant'))
@pytest.mark.parametrize('n,m', [(1, 1), (3, 5), (8, 8), (13, 2)])
def test_multiquadric_equals_the_pairwise_oracle(n, m, kind):
  rng = np.random.default_rng(n * 100 + m)
  source = oracles.random_atoms(rng, kind, n)
  target = oracles.random_atoms(rng, kind, m)
  for h in (1e-3, 0.3, 5.0):
    with jax.enable_x64(True):
      got = float(_multiquadric(jnp.asarray(source), jnp.asarray(target), h))
    scale = np.ptp(np.concatenate([source, target])) + 1.0
    np.testing.assert_allclose(got, _multiquadric_numpy(source, target, h),
                               rtol=1e-9, atol=1e-12 * scale)


@pytest.mark.parametrize('h', [0.05, 0.5, 3.0])
def test_multiquadric_equals_the_spectral_form(h):
  rng = np.random.default_rng(11)
  source, target = rng.normal(size=5), 0.5 + 2 * rng.normal(size=3)
  with jax.enable_x64(True):
    got = float(_multiquadric(jnp.asarray(source), jnp.asarray(target), h))
  np.testing.assert_allclose(got, _multiquadric_spectral(source, target, h),
                             rtol=1e-6)


def test_multiquadric_tends_to_cramer_from_below_at_the_predicted_rate():
  rng = np.random.default_rng(12)
  source, target = rng.normal(size=7), rng.normal(size=4)  # Distinct atoms.
  exact = oracles.cramer_piecewise(source, target)
  with jax.enable_x64(True):
    for h in (1e-1, 1e-2, 1e-3, 1e-4):
      gap = exact - float(_multiquadric(jnp.asarray(source),
                                        jnp.asarray(target), h))
      assert 0 <= gap <= h
    # Small h: the gap is h (1/N + 1/M) / 2 to first order.
    h = 1e-6
    gap = exact - float(_multiquadric(jnp.asarray(source), jnp.asarray(target),
                                      h))
    np.testing.assert_allclose(gap / h, (1 / 7 + 1 / 4) / 2, rtol=1e-3)


def test_multiquadric_is_a_distance_and_zero_for_equal_distributions():
  rng = np.random.default_rng(13)
  atoms = jnp.asarray(rng.normal(size=(4, 201)), jnp.float32)
  np.testing.assert_allclose(_multiquadric(atoms, atoms[:, ::-1], 0.1), 0.0,
                             atol=1e-6)
  for _ in range(20):
    s, t = rng.normal(size=6), rng.normal(size=9) * rng.uniform(0.1, 3)
    assert _multiquadric_numpy(s, t, rng.uniform(0.01, 10)) > 0


def test_multiquadric_scale_law():
  # k_h(s·u) = s·k_{h/s}(u): the loss at scale s and width h is s times the
  # loss at scale 1 and width h/s.
  rng = np.random.default_rng(14)
  s, t = rng.normal(size=6), rng.normal(size=6)
  with jax.enable_x64(True):
    for scale in (0.1, 10.0):
      big = float(_multiquadric(jnp.asarray(scale * s), jnp.asarray(scale * t),
                                0.3))
      small = float(_multiquadric(jnp.asarray(s), jnp.asarray(t), 0.3 / scale))
      np.testing.assert_allclose(big, scale * small, rtol=1e-12)


@pytest.mark.parametrize('n,m', [(1, 1), (5, 5), (7, 4)])
@pytest.mark.parametrize('h', [0.01, 1.0])
def test_multiquadric_gradients_match_finite_differences_and_smoothed_cdfs(
    n, m, h):
  rng = np.random.default_rng(n * 10 + m)
  source, target = rng.normal(size=n), rng.normal(size=m)
  source[0] = target[0]  # A tie: the smooth kernel has a gradient there.
  with jax.enable_x64(True):
    value = lambda s, t: float(_multiquadric(jnp.asarray(s), jnp.asarray(t), h))
    grad_s, grad_t = jax.jit(jax.grad(sc.multiquadric_cramer_loss, (0, 1)))(
        jnp.asarray(source), jnp.asarray(target), h)
    fd_s = oracles.central_differences(lambda s: value(s, target), source, 1e-6)
    fd_t = oracles.central_differences(lambda t: value(source, t), target, 1e-6)
  np.testing.assert_allclose(grad_s, fd_s, rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(grad_t, fd_t, rtol=1e-6, atol=1e-9)
  # The derivation: ∂/∂source_i = 2 (G_t − G_s)(source_i) / N with G the CDFs
  # convolved with the t₂-like density, whose CDF is (1 + u/√(u²+h²)) / 2.
  smoothed_cdf = lambda z, atoms: np.mean(
      0.5 * (1 + (z - atoms) / np.sqrt((z - atoms)**2 + h**2)))
  expected = [2 * (smoothed_cdf(z, target) - smoothed_cdf(z, source)) / n
              for z in source]
  np.testing.assert_allclose(grad_s, expected, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize('h', [0.01, 1.0])
def test_multiquadric_width_gradient_matches_finite_differences(h):
  rng = np.random.default_rng(21)
  source, target = rng.normal(size=6), rng.normal(size=4)
  with jax.enable_x64(True):
    value = lambda w: float(_multiquadric(jnp.asarray(source),
                                          jnp.asarray(target), w[0]))
    grad = jax.jit(jax.grad(sc.multiquadric_cramer_loss, 2))(
        jnp.asarray(source), jnp.asarray(target), jnp.float64(h))
    expected = oracles.central_differences(value, np.array([h]), 1e-6)
  np.testing.assert_allclose(grad, expected[0], rtol=1e-6, atol=1e-10)


def test_multiquadric_gradients_reduce_over_broadcast_dimensions():
  rng = np.random.default_rng(22)
  source = jnp.asarray(rng.normal(size=(3, 1, 5)))
  target = jnp.asarray(rng.normal(size=(4, 6)))
  total = lambda s, t: jnp.sum(sc.multiquadric_cramer_loss(s, t, 0.3))
  grad_s, grad_t = jax.jit(jax.grad(total, (0, 1)))(source, target)
  assert grad_s.shape == source.shape and grad_t.shape == target.shape
  # Summing the loss over the broadcast rows, row by row (a sequential loop
  # over the 12 pairs of rows: one loss in the program, not 12 copies).
  rows_i, rows_j = np.divmod(np.arange(12), 4)
  per_row = lambda s, t: jnp.sum(jax.lax.map(
      lambda ij: sc.multiquadric_cramer_loss(s[ij[0], 0], t[ij[1]], 0.3),
      (rows_i, rows_j)))
  expected_s, expected_t = jax.jit(jax.grad(per_row, (0, 1)))(source, target)
  np.testing.assert_allclose(grad_s, expected_s, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(grad_t, expected_t, rtol=1e-5, atol=1e-7)


def test_multiquadric_width_zero_is_finite_and_equals_cramer():
  source, target = jnp.array([0.0, 1.0, 1.0, 3.0]), jnp.array([1.0, 2.0])
  value, grad = jax.jit(jax.value_and_grad(sc.multiquadric_cramer_loss))(
      source, target, 0.0)
  np.testing.assert_allclose(value, jax.jit(cramer.cramer_loss)(source, target),
                             rtol=1e-6)
  assert np.all(np.isfinite(grad))


def test_multiquadric_shapes_dtypes_broadcast_and_array_widths():
  rng = np.random.default_rng(15)
  source = jnp.asarray(rng.normal(size=(3, 1, 9)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
  batched = _multiquadric(source, target, 0.2)
  assert batched.shape == (3, 4) and batched.dtype == jnp.float32
  unbatched = np.array([[_multiquadric(source[i, 0], target[j], 0.2)
                         for j in range(4)] for i in range(3)])
  np.testing.assert_allclose(batched, unbatched, rtol=1e-5)
  widths = jnp.array([[0.1], [1.0], [2.0]])  # One per source row.
  per_row = _multiquadric(source, target, widths)
  for i, h in enumerate((0.1, 1.0, 2.0)):
    np.testing.assert_allclose(per_row[i], _multiquadric(source[i], target, h),
                               rtol=1e-5)
  half = _multiquadric(source.astype(jnp.bfloat16), target, 0.2)
  assert half.dtype == jnp.float32
  with jax.enable_x64(True):
    assert _multiquadric(jnp.zeros(3, jnp.float64), jnp.ones(2), 0.1).dtype == (
        jnp.float64)


def test_bad_inputs_are_refused():
  with pytest.raises(ValueError, match='width must be >= 0'):
    sc.multiquadric_cramer_loss(jnp.zeros(3), jnp.zeros(3), -0.1)
  with pytest.raises(ValueError, match='floating point'):
    sc.multiquadric_cramer_loss(jnp.zeros(3, jnp.int32), jnp.zeros(3), 0.1)
  with pytest.raises(ValueError, match="noise must be one of.*'cauchy'"):
    sc.noisy_target_cramer_loss(jax.random.PRNGKey(0), jnp.zeros(3),
                                jnp.zeros(3), 0.1, noise='cauchy')
  with pytest.raises(ValueError, match='width must be >= 0'):
    sc.noisy_target_cramer_loss(jax.random.PRNGKey(0), jnp.zeros(3),
                                jnp.zeros(3), -1.0)


@pytest.mark.parametrize('loss', [
    functools.partial(sc.multiquadric_cramer_loss, width=0.1),
    lambda s, t: sc.noisy_target_cramer_loss(jax.random.PRNGKey(0), s, t,
                                             0.1)[1]])
def test_non_finite_atoms_give_nan_values_and_gradients(loss):
  source = jnp.array([[0.0, 1.0, 2.0], [0.0, np.nan, 2.0]])
  target = jnp.array([[0.5, 1.5, 2.5], [0.5, 1.5, 2.5]])
  values = jax.jit(loss)(source, target)
  assert np.isfinite(values[0]) and np.isnan(values[1])
  grad = jax.jit(jax.grad(lambda s: loss(s, target).sum()))(source)
  assert np.all(np.isfinite(grad[0])) and np.all(np.isnan(grad[1]))


# The noisy-target loss.

_noisy = jax.jit(sc.noisy_target_cramer_loss, static_argnames=('noise', 'form'))


def _smoothed_target_cdf(z, target, h, noise):
  u = (z - np.asarray(target)) / h
  if noise == 'normal':
    return stats.norm.cdf(u)
  return np.clip((u + 1) / 2, 0.0, 1.0)


@pytest.mark.parametrize('noise', sc.NOISES)
def test_noisy_expectation_is_the_smoothed_distance_plus_a_constant(noise):
  source = np.array([-1.2, -0.1, 0.4, 2.0])
  target = np.array([-1.0, 0.0, 0.1, 1.5, 3.0])
  h, draws = 0.4, 40000
  keys = jax.random.split(jax.random.PRNGKey(0), draws)
  with jax.enable_x64(True):
    sample = jax.jit(jax.vmap(jax.value_and_grad(
        lambda k, s: sc.noisy_target_cramer_loss(k, s, jnp.asarray(target), h,
                                                 noise=noise)[1], 1),
        (0, None)))
    values, grads = sample(keys, jnp.asarray(source))
  values, grads = np.asarray(values), np.asarray(grads)
  # Oracle by quadrature: E loss = ∫ (F_s − F_{ν_h})² + Var(F̂_noisy).
  cdf_t = lambda z: np.mean(_smoothed_target_cdf(z, target, h, noise))
  var_t = lambda z: np.sum(_smoothed_target_cdf(z, target, h, noise) * (
      1 - _smoothed_target_cdf(z, target, h, noise))) / target.size**2
  cdf_s = lambda z: np.mean(source <= z)
  lo, hi = min(source.min(), target.min()) - 8 * h, max(
      source.max(), target.max()) + 8 * h
  breaks = np.sort(np.concatenate([[lo, hi], source, target - h, target + h]))
  expected = sum(integrate.quad(
      lambda z: (cdf_s(z) - cdf_t(z))**2 + var_t(z), a, b, epsabs=1e-12)[0]
                 for a, b in zip(breaks[:-1], breaks[1:]))
  stderr = values.std() / np.sqrt(draws)
  assert abs(values.mean() - expected) < 4 * stderr
  # Unbiased source gradients of ℓ2²(source, ν_h): 2 (F_{ν_h} − F_s)(z)/N,
  # F_s halfway through its own jump.
  n = source.size
  want = [2 * (cdf_t(z) - (np.sum(source < z) + 0.5) / n) / n for z in source]
  stderr = grads.std(axis=0) / np.sqrt(draws)
  assert np.all(np.abs(grads.mean(axis=0) - want) < 4 * stderr + 1e-12)


def test_noisy_takes_and_returns_a_key_and_is_deterministic_given_it():
  key = jax.random.PRNGKey(3)
  source, target = jnp.linspace(-1, 1, 8), jnp.linspace(-0.5, 2, 8)
  next_key, value = _noisy(key, source, target, 0.3)
  again_key, again = _noisy(key, source, target, 0.3)
  assert value == again and np.array_equal(next_key, again_key)
  assert not np.array_equal(next_key, key)
  _, other = _noisy(next_key, source, target, 0.3)
  assert other != value


def test_noisy_tends_to_cramer_as_width_shrinks():
  rng = np.random.default_rng(16)
  source, target = rng.normal(size=(3, 12)), rng.normal(size=(3, 9))
  with jax.enable_x64(True):
    exact = jax.jit(cramer.cramer_loss)(jnp.asarray(source),
                                        jnp.asarray(target))
    for h in (1e-2, 1e-4, 1e-6):
      for noise in sc.NOISES:
        _, got = _noisy(jax.random.PRNGKey(1), jnp.asarray(source),
                        jnp.asarray(target), h, noise=noise)
        # |Δ| <= 2 mean|hε|; |ε| < 6 here with room to spare.
        assert np.all(np.abs(np.asarray(got) - np.asarray(exact)) <= 12 * h)


@pytest.mark.parametrize('noise', sc.NOISES)
def test_noisy_gradients_match_finite_differences_for_a_fixed_key(noise):
  rng = np.random.default_rng(17)
  source, target = rng.normal(size=5), rng.normal(size=4)
  key = jax.random.PRNGKey(4)
  with jax.enable_x64(True):
    loss = lambda s, t: sc.noisy_target_cramer_loss(key, s, t, 0.2,
                                                    noise=noise)[1]
    value = lambda s, t: float(jax.jit(loss)(jnp.asarray(s), jnp.asarray(t)))
    grad_s, grad_t = jax.jit(jax.grad(loss, (0, 1)))(jnp.asarray(source),
                                                      jnp.asarray(target))
    fd_s = oracles.central_differences(lambda s: value(s, target), source, 1e-7)
    fd_t = oracles.central_differences(lambda t: value(source, t), target, 1e-7)
  np.testing.assert_allclose(grad_s, fd_s, rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(grad_t, fd_t, rtol=1e-6, atol=1e-9)


def test_noisy_shapes_dtypes_and_per_row_widths():
  rng = np.random.default_rng(18)
  source = jnp.asarray(rng.normal(size=(3, 1, 9)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
  _, batched = _noisy(jax.random.PRNGKey(0), source, target, 0.2)
  assert batched.shape == (3, 4) and batched.dtype == jnp.float32
  # Width 0 in a row: that row is the exact Cramér loss.
  widths = jnp.array([[0.0], [1.0], [0.0]])
  _, per_row = _noisy(jax.random.PRNGKey(0), source, target, widths)
  exact = jax.jit(cramer.cramer_loss)(source, target)
  np.testing.assert_allclose(per_row[0], exact[0], rtol=1e-5)
  np.testing.assert_allclose(per_row[2], exact[2], rtol=1e-5)
  assert not np.allclose(per_row[1], exact[1])
  _, half = _noisy(jax.random.PRNGKey(0), source.astype(jnp.bfloat16), target,
                   0.1)
  assert half.dtype == jnp.float32


# atom_spread.

def test_atom_spread_is_the_mean_absolute_difference():
  rng = np.random.default_rng(19)
  atoms = rng.normal(size=(5, 13))
  spread = jax.jit(sc.atom_spread)
  with jax.enable_x64(True):
    got = spread(jnp.asarray(atoms))
  want = np.mean(np.abs(atoms[:, :, None] - atoms[:, None, :]), axis=(1, 2))
  np.testing.assert_allclose(got, want, rtol=1e-12)
  # 8 atoms at -1, 4 at +1: 2 · 2 · (2/3)(1/3) = 8/9.
  np.testing.assert_allclose(spread(jnp.array([-1.0] * 8 + [1.0] * 4)),
                             8 / 9, rtol=1e-6)
  np.testing.assert_allclose(spread(3 * jnp.asarray(atoms[0]) + 7),
                             3 * spread(jnp.asarray(atoms[0])), rtol=1e-5)
  with pytest.raises(ValueError, match='floating point'):
    sc.atom_spread(jnp.arange(3))
