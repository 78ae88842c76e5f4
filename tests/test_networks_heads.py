"""Tests for networks.heads."""

import haiku as hk
from hypothesis import given
from hypothesis import settings
from hypothesis import strategies as st
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from networks import heads


def _num_params(params):
  return sum(v.size for v in jax.tree_util.tree_leaves(params))


def _transform(head, x, seed=0):
  # Jitted: Haiku's init op by op compiles each of its operations apart.
  transformed = hk.without_apply_rng(hk.transform(head))
  return transformed, jax.jit(transformed.init)(jax.random.PRNGKey(seed), x)


def _param_shapes(head, x):
  """Return the parameters' shapes and dtypes (nothing computed)."""
  transformed = hk.without_apply_rng(hk.transform(head))
  return jax.eval_shape(transformed.init, jax.random.PRNGKey(0), x)


@pytest.mark.parametrize('num_actions,num_quantiles,num_layers,hidden_size',
                         [(1, 12, 2, 45), (3, 5, 0, 4), (18, 201, 1, 16)])
@pytest.mark.parametrize('kind', ['fc', 'nc'])
def test_head_output_shapes(kind, num_actions, num_quantiles, num_layers,
                            hidden_size):
  make = heads.fc_quantile_head if kind == 'fc' else heads.nc_quantile_head
  x = jax.random.normal(jax.random.PRNGKey(1), (4, 9))
  transformed = hk.without_apply_rng(hk.transform(
      make(num_actions, num_quantiles, num_layers, hidden_size)))
  # Initialised and applied in one program: one compilation per case.
  atoms = jax.jit(lambda key: transformed.apply(transformed.init(key, x), x))(
      jax.random.PRNGKey(0))
  assert atoms.shape == (4, num_actions, num_quantiles)


def test_synthetic_experiment_parameter_counts():
  # One action, N = 12, no torso, the constant input 1.0 (one input unit):
  # FC: 1*45+45 + 45*45+45 + 45*12+12 = 90 + 2070 + 552 = 2712.
  # NC, per branch 1*32+32 + 32*32+32 = 1120; outputs 32*12+12 = 396 (logits)
  # and 32*2+2 = 66 (scale, location): 2*1120 + 396 + 66 = 2702.
  x = jnp.ones((1, 1))
  fc_params = _param_shapes(heads.fc_quantile_head(1, 12, 2, 45), x)
  nc_params = _param_shapes(heads.nc_quantile_head(1, 12, 2, 32), x)
  assert _num_params(fc_params) == 2712
  assert _num_params(nc_params) == 2702


def test_nc_head_has_two_branches_of_equal_depth():
  params = _param_shapes(heads.nc_quantile_head(2, 7, 3, 5), jnp.ones((1, 4)))
  quantile = [k for k in params if k.startswith('nc_head/quantile_branch/')]
  scale = [k for k in params if k.startswith('nc_head/scale_branch/')]
  assert len(quantile) == len(scale) == 4  # 3 hidden layers + 1 output layer.
  assert params['nc_head/quantile_branch/linear_3']['w'].shape == (5, 14)
  assert params['nc_head/scale_branch/linear_3']['w'].shape == (5, 4)


def _scaled_nc_atoms(seed, scale, x, scale_activation):
  head = heads.nc_quantile_head(3, 12, 2, 8, scale_activation)
  transformed = hk.without_apply_rng(hk.transform(head))
  params = transformed.init(jax.random.PRNGKey(seed), x)
  params = jax.tree_util.tree_map(lambda p: p * scale, params)
  return transformed.apply(params, x)


_nc_atoms = jax.jit(_scaled_nc_atoms, static_argnums=3)


@settings(max_examples=60, deadline=None)
@given(seed=st.integers(0, 2**31 - 1),
       scale=st.floats(1e-3, 30.0),
       values=st.lists(st.floats(-1e3, 1e3, width=32), min_size=10,
                       max_size=10),
       scale_activation=st.sampled_from(['relu', 'softplus']))
def test_nc_atoms_are_non_decreasing_for_any_parameters_and_inputs(
    seed, scale, values, scale_activation):
  x = jnp.asarray(values, jnp.float32).reshape(2, 5)
  atoms = np.asarray(_nc_atoms(seed, scale, x, scale_activation))
  assert np.all(np.isfinite(atoms))
  assert np.all(np.diff(atoms, axis=-1) >= 0)


def _set_scale_preactivation(params, value):
  """Make the scale pre-activation equal `value` for every action."""
  params = dict(params)
  out = dict(params['nc_head/scale_branch/linear_2'])
  w, b = out['w'], out['b']
  out['w'] = w.at[:, 0::2].set(0.0)
  out['b'] = b.at[0::2].set(value)
  params['nc_head/scale_branch/linear_2'] = out
  return params


def test_nc_atoms_span_location_to_location_plus_scale():
  x = jax.random.normal(jax.random.PRNGKey(3), (4, 6))
  transformed, params = _transform(heads.nc_quantile_head(2, 10, 2, 8), x)
  params = _set_scale_preactivation(params, 1.5)
  atoms = jax.jit(transformed.apply)(params, x)
  # psi_N = 1 and psi_1 > 0: the last atom is beta + alpha, the first above beta.
  assert np.all(atoms[..., -1] - atoms[..., 0] > 0)
  assert np.all(atoms[..., -1] - atoms[..., 0] <= 1.5 + 1e-6)


def test_softplus_scale_keeps_atoms_spread_when_relu_scale_dies():
  x = jax.random.normal(jax.random.PRNGKey(3), (4, 6))
  relu, params = _transform(heads.nc_quantile_head(2, 10, 2, 8, 'relu'), x)
  softplus, _ = _transform(heads.nc_quantile_head(2, 10, 2, 8, 'softplus'), x)
  params = _set_scale_preactivation(params, -2.0)
  relu_atoms = jax.jit(relu.apply)(params, x)
  softplus_atoms = jax.jit(softplus.apply)(params, x)
  # ReLU: alpha = 0, every atom collapses onto beta. Softplus: alpha = log(1+e^-2).
  np.testing.assert_array_equal(relu_atoms[..., 1:], relu_atoms[..., :-1])
  assert np.all(np.diff(softplus_atoms, axis=-1) > 0)
  np.testing.assert_allclose(
      softplus_atoms[..., -1] - relu_atoms[..., -1], np.log1p(np.exp(-2.0)),
      rtol=1e-5)
  # Softplus has a gradient through the scale where ReLU has none.
  def spread(p, head):
    atoms = head.apply(p, x)
    return jnp.sum(atoms[..., -1] - atoms[..., 0])
  grad = jax.jit(jax.grad(spread), static_argnums=1)
  g_relu = grad(params, relu)['nc_head/scale_branch/linear_2']['b']
  g_soft = grad(params, softplus)['nc_head/scale_branch/linear_2']['b']
  assert np.all(g_relu[0::2] == 0)
  assert np.all(g_soft[0::2] > 0)


@pytest.mark.parametrize('make,kwargs', [
    (heads.fc_quantile_head, dict(num_actions=0)),
    (heads.fc_quantile_head, dict(num_quantiles=0)),
    (heads.nc_quantile_head, dict(hidden_size=0)),
    (heads.nc_quantile_head, dict(num_layers=-1)),
    (heads.nc_quantile_head, dict(scale_activation='tanh')),
])
def test_bad_sizes_raise_a_clear_error(make, kwargs):
  args = dict(num_actions=2, num_quantiles=3, num_layers=1, hidden_size=4)
  args.update(kwargs)
  with pytest.raises(ValueError, match=next(iter(kwargs))):
    make(**args)
