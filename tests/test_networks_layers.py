"""Tests for networks.layers."""

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from networks import layers


def _init(fn, x, seed=0):
  # Jitted: op by op, each operation compiles apart.
  return jax.jit(hk.transform(fn).init)(jax.random.PRNGKey(seed), x)


@pytest.mark.parametrize('fan_in', [1, 7, 400])
def test_linear_init_is_uniform_within_inverse_sqrt_fan_in(fan_in):
  params = _init(lambda x: layers.linear(300)(x), jnp.ones((1, fan_in)))
  bound = 1.0 / np.sqrt(fan_in)
  for leaf in jax.tree_util.tree_leaves(params):
    assert np.all(np.abs(leaf) <= bound)
    # Uniform over the whole interval, not a narrower distribution.
    assert np.max(np.abs(leaf)) > 0.9 * bound
  w = params['linear']['w']
  assert abs(float(np.std(w)) - bound / np.sqrt(3)) < 0.05 * bound


def test_conv_is_valid_padded_with_fan_in_from_kernel_and_channels():
  x = jnp.ones((2, 20, 20, 3))
  fn = lambda x: layers.conv(5, kernel_shape=(4, 4), stride=(2, 2))(x)
  params = _init(fn, x)
  out = jax.jit(hk.transform(fn).apply)(params, None, x)
  assert out.shape == (2, 9, 9, 5)  # (20 - 4) // 2 + 1 = 9: no padding.
  bound = 1.0 / np.sqrt(3 * 4 * 4)
  for leaf in jax.tree_util.tree_leaves(params):
    assert np.all(np.abs(leaf) <= bound)


def test_relu_mlp_output_is_non_negative_and_sized():
  fn = lambda x: layers.relu_mlp([6, 3])(x)
  x = jax.random.normal(jax.random.PRNGKey(1), (10, 4))
  transformed = hk.transform(fn)
  out = jax.jit(transformed.apply)(
      jax.jit(transformed.init)(jax.random.PRNGKey(0), x), None, x)
  assert out.shape == (10, 3)
  assert np.all(out >= 0)


def test_relu_mlp_with_no_layers_is_identity():
  x = jax.random.normal(jax.random.PRNGKey(1), (4, 3))
  transformed = hk.transform(lambda x: layers.relu_mlp([])(x))
  params = transformed.init(jax.random.PRNGKey(0), x)
  assert not params
  np.testing.assert_array_equal(transformed.apply(params, None, x), x)


@pytest.mark.parametrize('shape,kernel,stride', [
    ((2, 84, 84, 4), (8, 8), (4, 4)), ((3, 20, 20, 32), (4, 4), (2, 2)),
    ((2, 9, 9, 64), (3, 3), (1, 1)), ((1, 10, 12, 3), (3, 2), (2, 1))])
def test_conv_has_hk_conv2ds_parameters_and_values(shape, kernel, stride):
  """The same parameters (names, shapes, initial values) as hk.Conv2D, and
  its outputs and gradients: as patches (on this CPU) to float rounding."""
  x = jax.random.uniform(jax.random.PRNGKey(2), shape)

  def ours(x):
    with layers.convolutions_as_patches_on_cpu():
      return layers.conv(5, kernel, stride)(x)

  ours = hk.transform(ours)
  plain = hk.transform(lambda x: layers.conv(5, kernel, stride)(x))

  def reference(x):
    init = layers.dqn_default_initializer(shape[-1] * kernel[0] * kernel[1])
    return hk.Conv2D(5, kernel_shape=kernel, stride=stride, padding='VALID',
                     w_init=init, b_init=init)(x)

  reference = hk.transform(reference)
  squared = lambda f: lambda p, x: jnp.sum(f.apply(p, None, x) ** 2)

  @jax.jit  # One program per case: op by op, each operation compiles apart.
  def run(x):
    params = ours.init(jax.random.PRNGKey(0), x)
    return (params, reference.init(jax.random.PRNGKey(0), x),
            [f.apply(params, None, x) for f in (ours, reference, plain)],
            [jax.grad(squared(f), argnums=(0, 1))(params, x)
             for f in (ours, reference)])

  params, reference_params, (out, reference_out, plain_out), grads = run(x)
  jax.tree.map(np.testing.assert_array_equal, params, reference_params)
  np.testing.assert_allclose(out, reference_out, atol=2e-6)
  jax.tree.map(lambda a, b: np.testing.assert_allclose(a, b, rtol=1e-4,
                                                       atol=1e-5), *grads)
  # Outside the block: hk.Conv2D's computation itself.
  np.testing.assert_array_equal(plain_out, reference_out)


def test_patches_conv_is_lax_conv():
  x = jax.random.normal(jax.random.PRNGKey(0), (2, 11, 13, 3))
  w = jax.random.normal(jax.random.PRNGKey(1), (3, 4, 3, 6))
  want = jax.lax.conv_general_dilated(x, w, (2, 3), 'VALID',
                                      dimension_numbers=('NHWC', 'HWIO',
                                                         'NHWC'))
  np.testing.assert_allclose(
      jax.jit(layers.patches_conv, static_argnums=2)(x, w, (2, 3)), want,
      rtol=1e-5, atol=1e-5)
