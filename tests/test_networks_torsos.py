"""Tests for networks.torsos."""

import chex
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import pytest

from networks import torsos


class _Jitted:
  """A transformed function whose apply is jitted (op by op, each operation
  of the network would compile apart)."""

  def __init__(self, transformed):
    self.apply = jax.jit(transformed.apply)


def _transform(fn, x):
  transformed = hk.transform(fn)
  return _Jitted(transformed), jax.jit(transformed.init)(
      jax.random.PRNGKey(0), x)


def test_dqn_torso_shapes_and_parameter_count():
  x = jnp.zeros((3, 84, 84, 4), jnp.uint8)
  transformed, params = _transform(torsos.dqn_torso(), x)
  out = transformed.apply(params, None, x)
  assert out.shape == (3, 7 * 7 * 64)
  assert out.dtype == jnp.float32
  expected = (8 * 8 * 4 * 32 + 32) + (4 * 4 * 32 * 64 + 64) + (3 * 3 * 64 * 64 + 64)
  assert sum(v.size for v in jax.tree_util.tree_leaves(params)) == expected


def test_dqn_torso_scales_uint8_frames_to_unit_interval():
  frames = jax.random.randint(jax.random.PRNGKey(2), (2, 84, 84, 4), 0, 256)
  transformed, params = _transform(torsos.dqn_torso(), frames.astype(jnp.uint8))
  from_uint8 = transformed.apply(params, None, frames.astype(jnp.uint8))
  from_scaled = transformed.apply(params, None,
                                  frames.astype(jnp.float32) / 255.0 * 255.0)
  from_unscaled = transformed.apply(params, None, frames.astype(jnp.float32) / 255.0)
  np.testing.assert_allclose(from_uint8, from_scaled, rtol=1e-5, atol=1e-6)
  assert not np.allclose(from_uint8, from_unscaled)


def test_dqn_torso_rejects_unbatched_frames():
  with pytest.raises(AssertionError):
    _transform(torsos.dqn_torso(), jnp.zeros((84, 84, 4), jnp.uint8))


def test_mlp_torso_flattens_then_applies_relu_layers():
  x = jax.random.normal(jax.random.PRNGKey(1), (5, 2, 3))
  transformed, params = _transform(torsos.mlp_torso([7, 4]), x)
  out = transformed.apply(params, None, x)
  chex.assert_shape(out, (5, 4))
  assert np.all(out >= 0)
  assert params['mlp_torso/linear']['w'].shape == (6, 7)


def test_mlp_torso_without_layers_only_flattens():
  x = jnp.ones((4, 1))
  transformed, params = _transform(torsos.mlp_torso(()), x)
  assert not params
  np.testing.assert_array_equal(transformed.apply(params, None, x), x)


def test_minatar_torso_is_young_and_tians_conv_and_merges_the_stack():
  x = jnp.ones((3, 10, 10, 4, 1), jnp.uint8)
  transformed, params = _transform(torsos.minatar_torso(), x)
  out = transformed.apply(params, None, x)
  assert out.shape == (3, 8 * 8 * 16)
  assert sum(v.size for v in jax.tree_util.tree_leaves(params)) == (
      3 * 3 * 4 * 16 + 16)
  # Channels x stack are merged: a stack of two 2-channel frames is 4 channels.
  y = jnp.ones((3, 10, 10, 2, 2), jnp.uint8)
  np.testing.assert_array_equal(transformed.apply(params, None, y), out)
  with pytest.raises(AssertionError):
    transformed.apply(params, None, jnp.ones((3, 10, 10, 4), jnp.uint8))


def test_der_torso_shapes_and_parameter_count():
  x = jnp.zeros((3, 84, 84, 4), jnp.uint8)
  transformed, params = _transform(torsos.der_torso(), x)
  out = transformed.apply(params, None, x)
  # 5x5, stride 5, VALID: 84 -> 16 -> 3.
  chex.assert_shape(out, (3, 3 * 3 * 64))
  assert out.dtype == jnp.float32
  expected = (5 * 5 * 4 * 32 + 32) + (5 * 5 * 32 * 64 + 64)
  assert sum(v.size for v in jax.tree_util.tree_leaves(params)) == expected


def test_der_torso_has_no_padding():
  # VALID, 5x5, stride 5, twice: the 3x3 outputs read pixels [0, 75) only.
  x = jnp.zeros((1, 84, 84, 4), jnp.uint8)
  transformed, params = _transform(torsos.der_torso(), x)
  base = transformed.apply(params, None, x)
  np.testing.assert_array_equal(
      transformed.apply(params, None, x.at[0, 80, 80, :].set(255)), base)
  assert not np.array_equal(
      transformed.apply(params, None, x.at[0, 10:20, 10:20, :].set(255)), base)


def test_atari_torsos_are_the_settings_choices():
  from zoo.configuration import settings  # pylint: disable=g-import-not-at-top
  field = {f.name: f for f in settings.dataclasses.fields(settings.Settings)}
  assert (field['torso'].metadata['options']['enum_values']
          == list(torsos.ATARI_TORSOS))
