"""Tests of losses.wasserstein: the 1-Wasserstein distance."""

import hypothesis
from hypothesis import strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest
from scipy import stats

from losses import wasserstein
from tests import losses_oracles as oracles

_w1 = jax.jit(wasserstein.wasserstein1)


@hypothesis.settings(max_examples=25, deadline=None, derandomize=True, database=None)
@hypothesis.given(n=st.sampled_from([1, 3, 12]), seed=st.integers(0, 2**31),
                  kind=st.sampled_from(oracles.KINDS))
def test_equals_integral_of_cdf_gap_and_scipy(n, seed, kind):
  rng = np.random.default_rng(seed)
  source = oracles.random_atoms(rng, kind, n)
  target = oracles.random_atoms(rng, kind, n)
  with jax.enable_x64(True):
    got = float(_w1(jnp.asarray(source), jnp.asarray(target)))
  scale = np.ptp(np.concatenate([source, target])) + 1e-300
  np.testing.assert_allclose(got, oracles.wasserstein1_piecewise(source, target),
                             rtol=1e-10, atol=1e-14 * scale)
  np.testing.assert_allclose(got, stats.wasserstein_distance(source, target),
                             rtol=1e-10, atol=1e-14 * scale)


def test_permutation_invariant_and_broadcasts():
  rng = np.random.default_rng(0)
  source = jnp.asarray(rng.normal(size=(4, 1, 12)), jnp.float32)
  target = jnp.asarray(rng.normal(size=(3, 12)), jnp.float32)
  batched = _w1(source, target)
  assert batched.shape == (4, 3)
  np.testing.assert_array_equal(batched, _w1(source[..., ::-1], target))
  vmapped = jax.vmap(jax.vmap(_w1, (None, 0)), (0, None))(source[:, 0], target)
  np.testing.assert_allclose(batched, vmapped, rtol=1e-6)


def test_gradient_moves_each_sorted_atom_towards_its_partner():
  source = jnp.array([2.0, 0.0, 1.0])
  target = jnp.array([0.5, 1.5, -1.0])
  grad = jax.grad(wasserstein.wasserstein1)(source, target)
  # sorted pairs: 0 ↔ −1, 1 ↔ 0.5, 2 ↔ 1.5: all source atoms above their partner.
  np.testing.assert_allclose(grad, [1 / 3, 1 / 3, 1 / 3])


def test_different_sizes_are_an_error():
  with pytest.raises(ValueError, match=r'same number of atoms.*\(3,\).*\(4,\)'):
    wasserstein.wasserstein1(jnp.zeros(3), jnp.zeros(4))


@pytest.mark.parametrize('bad', [np.nan, np.inf, -np.inf])
def test_non_finite_atoms_give_nan(bad):
  source = jnp.array([[0.0, bad], [0.0, 1.0]])
  target = jnp.array([[0.0, bad], [0.0, 2.0]])  # inf − inf and inf − x alike.
  values = _w1(source, target)
  assert np.isnan(values[0]) and values[1] == 0.5
  grads = jax.grad(lambda s: _w1(s, target).sum())(source)
  assert np.all(np.isnan(grads[0])) and np.all(np.isfinite(grads[1]))
