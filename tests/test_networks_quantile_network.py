"""Tests for networks.quantile_network."""

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import networks


@pytest.mark.parametrize('head', ['fc', 'nc'])
def test_atari_network_output_shapes(head):
  network = hk.transform(networks.atari_quantile_network(18, 201, head=head))
  frames = jax.random.randint(jax.random.PRNGKey(1), (2, 84, 84, 4), 0, 256
                              ).astype(jnp.uint8)
  # Jitted: op by op, each operation of the network compiles apart.
  params = jax.jit(network.init)(jax.random.PRNGKey(0), frames)
  outputs = jax.jit(network.apply)(params, None, frames)
  assert isinstance(outputs, networks.QuantileNetworkOutputs)
  assert outputs.q_atoms.shape == (2, 18, 201)
  assert outputs.q_values.shape == (2, 18)
  np.testing.assert_allclose(outputs.q_values, outputs.q_atoms.mean(-1),
                             rtol=1e-5, atol=1e-6)
  if head == 'nc':
    assert np.all(np.diff(outputs.q_atoms, axis=-1) >= 0)


def test_atari_network_parameter_count_matches_qr_dqn():
  network = hk.transform(networks.atari_quantile_network(18, 201))
  params = jax.eval_shape(network.init, jax.random.PRNGKey(0),
                          jnp.zeros((1, 84, 84, 4), jnp.uint8))
  torso = (8 * 8 * 4 * 32 + 32) + (4 * 4 * 32 * 64 + 64) + (3 * 3 * 64 * 64 + 64)
  head = (3136 * 512 + 512) + (512 * 18 * 201 + 18 * 201)
  assert sum(v.size for v in jax.tree_util.tree_leaves(params)) == torso + head


def test_atari_network_rejects_unknown_head():
  with pytest.raises(ValueError, match='head'):
    networks.atari_quantile_network(4, 5, head='iqn')


def test_q_values_are_mean_over_atoms_without_gradient():
  network = hk.without_apply_rng(hk.transform(networks.quantile_network(
      networks.mlp_torso([5]), networks.fc_quantile_head(3, 4, 1, 6))))
  x = jax.random.normal(jax.random.PRNGKey(1), (7, 2))
  params = jax.jit(network.init)(jax.random.PRNGKey(0), x)
  outputs = jax.jit(network.apply)(params, x)
  assert outputs.q_atoms.shape == (7, 3, 4)
  np.testing.assert_allclose(outputs.q_values, outputs.q_atoms.mean(-1), rtol=1e-6)
  grads = jax.jit(jax.grad(lambda p: network.apply(p, x).q_values.sum()))(
      params)
  assert all(np.all(g == 0) for g in jax.tree_util.tree_leaves(grads))
  grads = jax.jit(jax.grad(lambda p: network.apply(p, x).q_atoms.sum()))(
      params)
  assert any(np.any(g != 0) for g in jax.tree_util.tree_leaves(grads))


def test_synthetic_networks_on_constant_input():
  x = jnp.ones((32, 1))
  for head, count in ((networks.fc_quantile_head(1, 12, 2, 45), 2712),
                      (networks.nc_quantile_head(1, 12, 2, 32), 2702)):
    network = hk.without_apply_rng(hk.transform(
        networks.quantile_network(networks.mlp_torso(()), head)))
    params = jax.jit(network.init)(jax.random.PRNGKey(0), x)
    assert sum(v.size for v in jax.tree_util.tree_leaves(params)) == count
    outputs = jax.jit(network.apply)(params, x)
    assert outputs.q_atoms.shape == (32, 1, 12)
    # One state: every batch element sees the same atoms, to the last bits
    # that a matrix product's tiles may round apart (a row of the last tile).
    np.testing.assert_allclose(
        outputs.q_atoms, np.broadcast_to(outputs.q_atoms[:1], (32, 1, 12)),
        rtol=1e-6, atol=1e-7)
