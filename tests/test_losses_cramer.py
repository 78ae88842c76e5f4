"""Tests of losses.cramer: the Cramér loss in its sorted and pairwise forms."""

import functools

import hypothesis
from hypothesis import strategies as st
import jax
from jax import export
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import integrate
from scipy import optimize

from losses import cramer
from tests import losses_oracles as oracles

_SETTINGS = hypothesis.settings(max_examples=40, deadline=None,
                                derandomize=True, database=None)
_SIZES = st.sampled_from([1, 2, 3, 5, 8, 13])
# The sorted form (exact up to one rounding per atom, at every size), the
# pairwise form (the energy identity), and cramer_loss_pairwise (the same).
_sorted_loss = functools.partial(cramer.cramer_loss, form='sorted')
_pairwise_loss = functools.partial(cramer.cramer_loss, form='pairwise')
_FORMS = [_sorted_loss, _pairwise_loss]
_cramer = jax.jit(_sorted_loss)
_pairwise = jax.jit(cramer.cramer_loss_pairwise)


def _grad(loss, argnums=0):
  return jax.jit(jax.grad(loss, argnums=argnums))


@_SETTINGS
@hypothesis.given(n=_SIZES, m=_SIZES, seed=st.integers(0, 2**31),
                  source_kind=st.sampled_from(oracles.KINDS),
                  target_kind=st.sampled_from(oracles.KINDS),
                  equal=st.booleans())
def test_sort_based_equals_piecewise_integration(n, m, seed, source_kind,
                                                 target_kind, equal):
  rng = np.random.default_rng(seed)
  source = oracles.random_atoms(rng, source_kind, n)
  target = source[rng.permutation(n)] if equal else oracles.random_atoms(
      rng, target_kind, m)
  expected = oracles.cramer_piecewise(source, target)
  scale = np.ptp(np.concatenate([source, target])) + 1e-300
  with jax.enable_x64(True):
    got = float(_cramer(jnp.asarray(source), jnp.asarray(target)))
  np.testing.assert_allclose(got, expected, rtol=1e-12, atol=1e-15 * scale)
  if equal:
    assert got == 0.0


def test_float32_is_accurate_for_a_small_gap_far_from_zero():
  rng = np.random.default_rng(0)
  source = 1000.0 + np.sort(rng.normal(size=201)).astype(np.float32)
  target = source + np.float32(1e-3)  # Near convergence of a TD update.
  expected = oracles.cramer_piecewise(source.astype(np.float64),
                                      target.astype(np.float64))
  got = float(_cramer(jnp.asarray(source), jnp.asarray(target)))
  np.testing.assert_allclose(got, expected, rtol=1e-5)


def test_float32_matches_float64_on_large_unequal_sizes():
  rng = np.random.default_rng(1)
  source, target = rng.normal(size=(3, 700)), rng.normal(size=(3, 900))
  got = _cramer(jnp.asarray(source, jnp.float32), jnp.asarray(target, jnp.float32))
  assert got.dtype == jnp.float32
  expected = [oracles.cramer_piecewise(s, t) for s, t in zip(source, target)]
  np.testing.assert_allclose(got, expected, rtol=1e-5)


@_SETTINGS
@hypothesis.given(n=_SIZES, seed=st.integers(0, 2**31),
                  kind=st.sampled_from(('normal', 'grid', 'offset')))
def test_sort_based_equals_closed_form_and_pairwise(n, seed, kind):
  rng = np.random.default_rng(seed)
  source = np.sort(oracles.random_atoms(rng, kind, n))
  target = np.sort(oracles.random_atoms(rng, kind, n))
  closed = oracles.cramer_sorted_closed_form(source, target)
  with jax.enable_x64(True):
    sort_based = float(_cramer(jnp.asarray(source), jnp.asarray(target)))
    pairwise = float(_pairwise(jnp.asarray(source), jnp.asarray(target)))
  scale = np.ptp(np.concatenate([source, target])) + 1.0
  np.testing.assert_allclose(sort_based, closed, rtol=1e-12, atol=1e-12 * scale)
  np.testing.assert_allclose(pairwise, closed, rtol=1e-9, atol=1e-12 * scale)


@_SETTINGS
@hypothesis.given(n=_SIZES, m=_SIZES, seed=st.integers(0, 2**31),
                  kind=st.sampled_from(('normal', 'grid')))
def test_pairwise_equals_piecewise_for_unequal_sizes(n, m, seed, kind):
  rng = np.random.default_rng(seed)
  source = oracles.random_atoms(rng, kind, n)
  target = oracles.random_atoms(rng, kind, m)
  with jax.enable_x64(True):
    got = float(_pairwise(jnp.asarray(source), jnp.asarray(target)))
  np.testing.assert_allclose(got, oracles.cramer_piecewise(source, target),
                             rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize('n,m', [(1, 3), (5, 5), (8, 13), (13, 2)])
def test_pairwise_form_has_the_sorted_forms_gradient_and_value(n, m):
  rng = np.random.default_rng(n * 100 + m)
  rows = [(kind, oracles.random_atoms(rng, kind, n),
           oracles.random_atoms(rng, kind, m))
          for kind in oracles.KINDS for _ in range(3)]
  with jax.enable_x64(True):
    source = jnp.asarray(np.stack([s for _, s, _ in rows]))
    target = jnp.asarray(np.stack([t for _, _, t in rows]))
    total = lambda loss: jax.jit(jax.value_and_grad(
        lambda s, t: loss(s, t).sum(), (0, 1)))
    _, pairwise_grads = total(_pairwise_loss)(source, target)
    _, exact_grads = total(_sorted_loss)(source, target)
    pairwise = jax.jit(_pairwise_loss)(source, target)
  # Sums of ±1/(N·M) against the exact counts: equal up to rounding.
  for got, want in zip(pairwise_grads, exact_grads):
    np.testing.assert_allclose(got, want, rtol=1e-13, atol=1e-15)
  # The value: the energy identity's terms cancel, up to rounding of the
  # atoms' spread (the sorted form is checked against integration above).
  for (kind, s, t), value in zip(rows, np.asarray(pairwise)):
    scale = np.ptp(np.concatenate([s, t])) + np.abs(s).max() * 1e-16
    np.testing.assert_allclose(value, oracles.cramer_piecewise(s, t),
                               rtol=1e-9, atol=1e-13 * scale, err_msg=kind)


def test_auto_form_thresholds():
  assert cramer.auto_form('cpu', 32, 32) == 'pairwise'
  assert cramer.auto_form('cpu', 33, 32) == 'sorted'
  assert cramer.auto_form('cpu', 201, 201) == 'sorted'
  for platform in ('cuda', 'rocm', 'tpu'):
    assert cramer.auto_form(platform, 201, 201) == 'pairwise'
    assert cramer.auto_form(platform, 512, 512) == 'pairwise'
    assert cramer.auto_form(platform, 513, 512) == 'sorted'
    assert cramer.auto_form(platform, 4000, 4000) == 'sorted'


@pytest.mark.parametrize('n', [16, 201, 1000])
def test_auto_compiles_the_chosen_form_for_each_platform(n):
  """Only the platform's form is lowered: a GPU gets no sort at N = 201."""

  def td_value_and_grad(s, t):
    return jax.value_and_grad(lambda s: jnp.mean(
        cramer.cramer_loss(s, jax.lax.stop_gradient(t))))(s)

  atoms = jnp.zeros((32, n), jnp.float32)
  for platform in ('cpu', 'cuda'):
    module = export.export(jax.jit(td_value_and_grad), platforms=[platform])(
        atoms, atoms).mlir_module()
    sorted_form = cramer.auto_form(platform, n, n) == 'sorted'
    assert ('stablehlo.sort' in module) == sorted_form, (platform, n)


@pytest.mark.parametrize('n', [16, 201])
def test_auto_equals_the_cpu_form_bit_for_bit(n):
  rng = np.random.default_rng(n)
  source = jnp.asarray(rng.normal(size=(8, n)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(8, n)), jnp.float32)
  chosen = functools.partial(cramer.cramer_loss,
                             form=cramer.auto_form('cpu', n, n))
  results = [jax.jit(jax.value_and_grad(lambda s, t: loss(s, t).sum(), (0, 1)))(
      source, target) for loss in (cramer.cramer_loss, chosen)]
  for got, want in zip(jax.tree.leaves(results[0]), jax.tree.leaves(results[1])):
    np.testing.assert_array_equal(got, want)


def test_unknown_form_is_refused():
  with pytest.raises(ValueError, match="form must be one of.*'fast'"):
    cramer.cramer_loss(jnp.zeros(3), jnp.zeros(3), form='fast')


def test_invariant_to_permuting_atoms_values_and_gradients():
  rng = np.random.default_rng(2)
  source = jnp.asarray(rng.integers(-4, 5, size=17), jnp.float32)  # With ties.
  target = jnp.asarray(rng.normal(size=11), jnp.float32)
  perm_s, perm_t = rng.permutation(17), rng.permutation(11)
  assert _cramer(source, target) == _cramer(source[perm_s], target[perm_t])
  grads = _grad(_sorted_loss, (0, 1))(source, target)
  permuted = _grad(_sorted_loss, (0, 1))(source[perm_s], target[perm_t])
  np.testing.assert_array_equal(permuted[0], grads[0][perm_s])
  np.testing.assert_array_equal(permuted[1], grads[1][perm_t])


@pytest.mark.parametrize('n,m', [(1, 1), (5, 5), (7, 4), (3, 12)])
@pytest.mark.parametrize('loss', _FORMS)
def test_gradients_match_finite_differences(loss, n, m):
  rng = np.random.default_rng(n * 100 + m)
  source, target = rng.normal(size=n), rng.normal(size=m)  # Distinct atoms.
  with jax.enable_x64(True):
    jitted = jax.jit(loss)
    value = lambda s, t: float(jitted(jnp.asarray(s), jnp.asarray(t)))
    grad_s, grad_t = _grad(loss, (0, 1))(jnp.asarray(source), jnp.asarray(target))
    fd_s = oracles.central_differences(lambda s: value(s, target), source, 1e-7)
    fd_t = oracles.central_differences(lambda t: value(source, t), target, 1e-7)
  np.testing.assert_allclose(grad_s, fd_s, rtol=1e-6, atol=1e-9)
  np.testing.assert_allclose(grad_t, fd_t, rtol=1e-6, atol=1e-9)
  assert np.any(np.asarray(grad_t) != 0)  # Gradients flow into the target.


@pytest.mark.parametrize('loss', _FORMS)
def test_stop_gradient_on_target_stops_only_the_target(loss):
  source, target = jnp.array([0.0, 1.0, 3.0]), jnp.array([0.5, 2.0, 2.5])
  stopped = lambda s, t: loss(s, jax.lax.stop_gradient(t))
  grad_s, grad_t = _grad(stopped, (0, 1))(source, target)
  np.testing.assert_array_equal(grad_t, 0.0)
  np.testing.assert_array_equal(grad_s, _grad(loss)(source, target))


@pytest.mark.parametrize('form', _FORMS)
def test_gradients_on_ties_are_finite_symmetric_and_average_one_sided(form):
  with jax.enable_x64(True):
    source = jnp.array([0.0, 1.0, 1.0, 1.0, 2.0, 2.0])
    target = jnp.array([1.0, 1.0, 2.0, 4.0])
    grad_s, grad_t = _grad(form, (0, 1))(source, target)
    assert np.all(np.isfinite(grad_s)) and np.all(np.isfinite(grad_t))
    assert grad_s[1] == grad_s[2] == grad_s[3] and grad_s[4] == grad_s[5]
    assert grad_t[0] == grad_t[1]
    # Same as the energy form (the tied |·| have zero derivative).
    pairwise = _grad(cramer.cramer_loss_pairwise, (0, 1))(source, target)
    np.testing.assert_allclose(grad_s, pairwise[0], atol=1e-15)
    np.testing.assert_allclose(grad_t, pairwise[1], atol=1e-15)
    # Moving the tied group together: the mean of the one-sided derivatives.
    group = np.array([0, 1, 1, 1, 0, 0], np.float64)
    loss = lambda s: float(_cramer(jnp.asarray(s), target))
    eps = 1e-6
    right = (loss(np.asarray(source) + eps * group) - loss(source)) / eps
    left = (loss(source) - loss(np.asarray(source) - eps * group)) / eps
    np.testing.assert_allclose(np.dot(grad_s, group), (left + right) / 2, rtol=1e-6)


@pytest.mark.parametrize('form', _FORMS)
def test_equal_distributions_have_zero_loss_and_gradient(form):
  rng = np.random.default_rng(3)
  atoms = jnp.asarray(rng.normal(size=(4, 201)), jnp.float32)
  shuffled = atoms[:, ::-1]
  value = jax.jit(form)(atoms, shuffled)
  grads = _grad(lambda s, t: form(s, t).sum(), (0, 1))(atoms, shuffled)
  if form is _sorted_loss:  # Integer counts: exactly zero.
    np.testing.assert_array_equal(value, 0.0)
    np.testing.assert_array_equal(grads[0], 0.0)
    np.testing.assert_array_equal(grads[1], 0.0)
  else:  # Float sums in another order: zero up to their rounding.
    np.testing.assert_allclose(value, 0.0, atol=1e-6)
    # Against gradients of order 1/N = 5e-3.
    np.testing.assert_allclose(grads[0], 0.0, atol=1e-8)
    np.testing.assert_allclose(grads[1], 0.0, atol=1e-8)


def test_batch_shapes_jit_and_vmap_agree_with_unbatched():
  rng = np.random.default_rng(4)
  source = jnp.asarray(rng.normal(size=(3, 1, 9)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(4, 6)), jnp.float32)
  for loss, rtol in ((_cramer, 1e-6), (jax.jit(_pairwise_loss), 2e-5)):
    batched = loss(source, target)
    assert batched.shape == (3, 4)
    unbatched = np.array([[loss(source[i, 0], target[j]) for j in range(4)]
                          for i in range(3)])
    np.testing.assert_allclose(batched, unbatched, rtol=rtol)
    vmapped = jax.jit(jax.vmap(jax.vmap(loss, (None, 0)), (0, None)))(
        source[:, 0], target)
    np.testing.assert_allclose(vmapped, unbatched, rtol=rtol)
  # The agent's call: vmap over the batch inside a jitted value_and_grad.
  online, td_target = source[:, 0, :], target[:3, :]
  def agent_loss(s):
    return jnp.mean(jax.vmap(cramer.cramer_loss)(s, jax.lax.stop_gradient(td_target)))
  value, grad = jax.jit(jax.value_and_grad(agent_loss))(online)
  expected = _grad(lambda s: jnp.mean(cramer.cramer_loss(s, td_target)))(online)
  np.testing.assert_allclose(value, jnp.mean(_cramer(online, td_target)), rtol=1e-6)
  np.testing.assert_allclose(grad, expected, rtol=1e-6)


def test_large_sizes_use_the_binary_count_and_stay_exact():
  rng = np.random.default_rng(5)
  source = rng.integers(-50, 50, size=1500).astype(np.float64)  # Ties.
  target = rng.normal(scale=30, size=1100)
  with jax.enable_x64(True):
    got = float(_cramer(jnp.asarray(source), jnp.asarray(target)))
    grad = _grad(_sorted_loss)(jnp.asarray(source), jnp.asarray(target))
    pairwise = _grad(cramer.cramer_loss_pairwise)(jnp.asarray(source), jnp.asarray(target))
  np.testing.assert_allclose(got, oracles.cramer_piecewise(source, target), rtol=1e-12)
  np.testing.assert_allclose(grad, pairwise, atol=1e-15)


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
@pytest.mark.parametrize('loss', _FORMS + [cramer.cramer_loss_pairwise])
def test_non_finite_atoms_give_nan_values_and_gradients(loss, bad):
  source = jnp.array([[0.0, 1.0, 2.0], [0.0, bad, 2.0], [bad, bad, 1.0]])
  target = jnp.array([[0.5, 1.5, bad], [0.5, 1.5, 2.5], [bad, 0.0, 1.0]])
  clean = jnp.array([0.0, 1.0, 2.0]), jnp.array([0.5, 1.5, 2.5])
  values = jax.jit(loss)(source, target)
  assert np.all(np.isnan(values))
  grads = _grad(lambda s, t: loss(s, t).sum(), (0, 1))(source, target)
  assert np.all(np.isnan(grads[0])) and np.all(np.isnan(grads[1]))
  # Other rows of a batch are not touched.
  mixed = jnp.stack([source[1], clean[0]]), jnp.stack([target[1], clean[1]])
  values = jax.jit(loss)(*mixed)
  assert np.isnan(values[0]) and values[1] == jax.jit(loss)(*clean)
  grad_s = _grad(lambda s, t: loss(s, t).sum())(*mixed)
  np.testing.assert_array_equal(grad_s[1], _grad(loss)(*clean))


def test_float64_running_sum_stays_exact_when_counts_overflow_int32():
  # 2·N·M >= 2**31 switches the counts to int64 under x64.
  with jax.enable_x64(True):
    source = jnp.linspace(0.0, 1.0, 40000)
    target = jnp.linspace(0.0, 1.0, 30000) + 0.25
    got = float(_cramer(source, target))
  np.testing.assert_allclose(
      got, oracles.cramer_piecewise(np.asarray(source), np.asarray(target)),
      rtol=1e-10)


# Projection: the staircase at the midpoint quantiles minimises the distance.


def _two_dirac_distance(theta, fraction=0.3):
  """Cramér distance to p δ(−1) + (1 − p) δ(+1), via a 10-atom staircase."""
  num_low = int(round(10 * fraction))
  mixture = np.array([-1.0] * num_low + [1.0] * (10 - num_low))
  return float(_cramer(jnp.asarray(theta), jnp.asarray(mixture)))


def _exponential_distance(theta, power=2):
  """∫|F_θ − F|^power for F the Exp(1) CDF, by adaptive quadrature."""
  theta = np.sort(np.asarray(theta, np.float64))
  n = theta.size
  cdf = lambda z: 1.0 - np.exp(-z) if z > 0 else 0.0
  breaks = np.concatenate([[min(theta[0], 0.0) - 1.0], theta, [theta[-1] + 60.0]])
  total = 0.0
  for k in range(len(breaks) - 1):
    level = min(max(k, 0), n) / n  # F_θ on (breaks[k], breaks[k+1]).
    lo, hi = breaks[k], breaks[k + 1]
    pieces = [lo, hi] if not lo < 0 < hi else [lo, 0.0, hi]
    for a, b in zip(pieces[:-1], pieces[1:]):
      total += integrate.quad(lambda z: abs(level - cdf(z))**power, a, b,
                              epsabs=1e-13, epsrel=1e-12)[0]
  return total


def test_midpoint_staircase_is_the_cramer_and_w1_projection_of_two_diracs():
  with jax.enable_x64(True):
    n = 4
    tau_hat = (2 * np.arange(1, n + 1) - 1) / (2 * n)
    projection = np.where(tau_hat < 0.3, -1.0, 1.0)  # F⁻¹ of the mixture.
    best = _two_dirac_distance(projection)
    rng = np.random.default_rng(6)
    for _ in range(30):
      perturbed = projection + rng.normal(scale=rng.choice([1e-3, 0.1, 1.0]), size=n)
      assert _two_dirac_distance(perturbed) > best
    for i in range(n):
      for eps in (-1e-4, 1e-4):
        step = np.eye(n)[i] * eps
        assert _two_dirac_distance(projection + step) > best
  # W1 (convex in the sorted atoms, so a local minimum is the global one).
  mixture = np.array([-1.0] * 3 + [1.0] * 7)
  w1 = lambda theta: oracles.wasserstein1_piecewise(theta, mixture)
  for i in range(n):
    for eps in (-1e-4, 1e-4):
      assert w1(projection + np.eye(n)[i] * eps) > w1(projection)


def test_midpoint_staircase_is_the_cramer_and_w1_projection_of_exponential():
  n = 5
  tau_hat = (2 * np.arange(1, n + 1) - 1) / (2 * n)
  projection = -np.log1p(-tau_hat)  # F⁻¹(τ̂) for Exp(1).
  best = _exponential_distance(projection)
  rng = np.random.default_rng(7)
  for _ in range(10):
    assert _exponential_distance(projection + rng.normal(scale=0.05, size=n)) > best
  for i in range(n):
    for eps in (-1e-3, 1e-3):
      assert _exponential_distance(projection + np.eye(n)[i] * eps) > best
  # A minimiser of the Cramér distance from elsewhere lands there too.
  cramer_min = optimize.minimize(_exponential_distance, np.linspace(0, 2, n),
                                 method='BFGS', options=dict(gtol=1e-10)).x
  np.testing.assert_allclose(cramer_min, projection, atol=1e-4)
  # So does the W1 projection (W1 is convex in the sorted atoms).
  w1 = lambda theta: _exponential_distance(theta, power=1)
  for i in range(n):
    for eps in (-1e-3, 1e-3):
      assert w1(projection + np.eye(n)[i] * eps) > w1(projection)
  # The quadrature agrees with cramer_loss against a fine staircase of Exp(1).
  fine = -np.log1p(-(np.arange(200000) + 0.5) / 200000)
  with jax.enable_x64(True):
    approx = float(_cramer(jnp.asarray(projection), jnp.asarray(fine)))
  np.testing.assert_allclose(approx, best, rtol=1e-3)


def test_float32_gradient_is_exact_up_to_rounding_at_large_n():
  # Differentiating through the sort forms r_{k-1}² − r_k² in float32 and
  # loses ~4e-3 of the gradient here; the integer counts lose nothing.
  rng = np.random.default_rng(8)
  source = rng.normal(size=(2, 3000)).astype(np.float32)
  target = rng.normal(size=(2, 3000)).astype(np.float32)
  loss = lambda s, t: _sorted_loss(s, t).sum()
  grad32 = np.asarray(_grad(loss)(source, target))
  with jax.enable_x64(True):
    grad64 = np.asarray(_grad(loss)(source.astype(np.float64), target.astype(np.float64)))
  np.testing.assert_allclose(grad32, grad64, atol=1e-6 * np.abs(grad64).max())
