"""Tests for networks.iqn_network, checked against DQN Zoo's IQN construction."""

from typing import NamedTuple

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import networks


def _conv(x, w, b, stride):
  y = jax.lax.conv_general_dilated(x, w, (stride, stride), 'VALID',
                                   dimension_numbers=('NHWC', 'HWIO', 'NHWC'))
  return y + b


def _dqn_zoo_iqn(params, frames, taus, latent_dim=64):
  """DQN Zoo's iqn_atari_network, restated in plain jnp: -> q_dist [B, N, A].

  Its published structure: the DQN torso on frames / 255; the taus embedded
  by cos(π i τ), i = 1..latent_dim, a linear layer to the torso's width and
  a ReLU; the product with the torso's embedding; the DQN value head (linear
  512, ReLU, linear A) on each of the B × N products.
  """
  (w1, b1), (w2, b2), (w3, b3), (we, be), (wh, bh), (wo, bo) = params
  x = frames.astype(jnp.float32) / 255.0
  x = jax.nn.relu(_conv(x, w1, b1, 4))
  x = jax.nn.relu(_conv(x, w2, b2, 2))
  x = jax.nn.relu(_conv(x, w3, b3, 1))
  state_embedding = x.reshape(x.shape[0], -1)
  pi_multiples = jnp.arange(1, latent_dim + 1, dtype=jnp.float32) * jnp.pi
  tau_embedding = jnp.cos(pi_multiples[None, None, :] * taus[:, :, None])
  tau_embedding = jax.nn.relu(tau_embedding @ we + be)
  head_input = tau_embedding * state_embedding[:, None, :]
  return jax.nn.relu(head_input @ wh + bh) @ wo + bo


def _layers(params, torso):
  names = [f'{torso}/conv2_d', f'{torso}/conv2_d_1', f'{torso}/conv2_d_2',
           'iqn_level_embedding/linear', 'iqn_head/linear', 'iqn_head/linear_1']
  return [(params[n]['w'], params[n]['b']) for n in names if n in params]


def test_atari_iqn_equals_dqn_zoo_construction_from_the_same_parameters():
  network = hk.without_apply_rng(hk.transform(networks.atari_iqn_network(5)))
  frames = jax.random.randint(jax.random.PRNGKey(1), (2, 84, 84, 4), 0, 256
                              ).astype(jnp.uint8)
  # DQN Zoo samples τ ~ U[0, 1) per state and sample.
  taus = jax.random.uniform(jax.random.PRNGKey(2), (2, 7))
  # Parameters drawn by numpy (JAX's CPU generator is slow at this size),
  # U(±1/√fan_in) as DQN Zoo's initialiser, biases included, so that a bias
  # left out or misplaced would show.
  shapes = jax.eval_shape(network.init, jax.random.PRNGKey(0), frames, taus)
  rng = np.random.default_rng(0)
  params = jax.tree_util.tree_map(
      lambda s: jnp.asarray(rng.uniform(-1, 1, s.shape) / np.sqrt(
          np.prod(s.shape[:-1]) if len(s.shape) > 1 else 64), jnp.float32),
      shapes)
  outputs = jax.jit(network.apply)(params, frames, taus)
  q_dist = jax.jit(_dqn_zoo_iqn)(_layers(params, 'dqn_torso'), frames, taus)
  assert q_dist.shape == (2, 7, 5)
  assert outputs.q_atoms.shape == (2, 5, 7)
  # Ours is [B, A, N]; DQN Zoo's [B, N, A].
  np.testing.assert_allclose(outputs.q_atoms, jnp.swapaxes(q_dist, 1, 2),
                             rtol=2e-5, atol=2e-6)
  np.testing.assert_allclose(outputs.q_values, jnp.mean(q_dist, axis=1),
                             rtol=2e-5, atol=2e-6)
  assert float(jnp.std(outputs.q_atoms)) > 1e-3  # Not a trivial agreement.


def test_atari_iqn_parameters_and_initialisation_follow_dqn_zoo():
  network = hk.transform(networks.atari_iqn_network(18))
  shapes = jax.eval_shape(network.init, jax.random.PRNGKey(0),
                          jnp.zeros((1, 84, 84, 4), jnp.uint8),
                          jnp.zeros((1, 3)))
  torso = (8 * 8 * 4 * 32 + 32) + (4 * 4 * 32 * 64 + 64) + (3 * 3 * 64 * 64 + 64)
  rest = (64 * 3136 + 3136) + (3136 * 512 + 512) + (512 * 18 + 18)
  assert sum(int(np.prod(v.shape)) for v in jax.tree_util.tree_leaves(shapes)
             ) == torso + rest


def test_level_embedding_initialisation_is_dqn_zoo_s(minatar):
  # U(±1/√fan_in) for weights and biases: the embedding's fan-in is 64 (shown
  # on MinAtar's torso, whose initialisation is cheaper to draw).
  embedding = minatar.params['iqn_level_embedding/linear']
  for p in (embedding['w'], embedding['b']):
    assert float(jnp.max(jnp.abs(p))) <= 1 / 8
    assert float(jnp.max(jnp.abs(p))) > 0.99 / 8


class _Minatar(NamedTuple):
  network: hk.Transformed
  params: hk.Params
  observations: jnp.ndarray
  taus: jnp.ndarray


@pytest.fixture(scope='module', name='minatar')
def _minatar():
  network = hk.without_apply_rng(hk.transform(networks.minatar_iqn_network(6)))
  observations = jax.random.bernoulli(jax.random.PRNGKey(1), 0.2,
                                      (3, 10, 10, 4, 1)).astype(jnp.uint8)
  taus = jnp.tile(jnp.array([[0.05, 0.5, 0.95, 0.5]]), (3, 1))
  params = jax.jit(network.init)(jax.random.PRNGKey(0), observations, taus)
  return _Minatar(network, params, observations, taus)


def test_minatar_iqn_shapes_and_levels_change_the_atoms(minatar):
  network, params, observations, taus = minatar
  outputs = jax.jit(network.apply)(params, observations, taus)
  assert outputs.q_atoms.shape == (3, 6, 4)
  assert outputs.q_values.shape == (3, 6)
  # The same level gives the same atom; different levels, different atoms.
  np.testing.assert_array_equal(outputs.q_atoms[..., 1], outputs.q_atoms[..., 3])
  assert not np.allclose(outputs.q_atoms[..., 0], outputs.q_atoms[..., 2])
  # The embedding maps to the torso's width (8 × 8 × 16).
  assert params['iqn_level_embedding/linear']['w'].shape == (64, 1024)
  # q_values carry no gradient, as in DQN Zoo.
  grad = jax.jit(jax.grad(lambda p: jnp.sum(network.apply(
      p, observations, taus).q_values)))(params)
  assert all(float(jnp.max(jnp.abs(g))) == 0
             for g in jax.tree_util.tree_leaves(grad))


def test_cosine_features_start_at_frequency_one():
  features = networks.cosine_features(jnp.array([[0.0, 0.5, 1.0]]), 4)
  np.testing.assert_allclose(features[0, 1], np.cos(np.pi * np.arange(1, 5) / 2),
                             atol=1e-6)
  np.testing.assert_allclose(features[0, 2], [-1, 1, -1, 1], atol=1e-6)


def test_bad_sizes_and_mismatched_batches_are_refused():
  with pytest.raises(ValueError, match='num_cosines'):
    networks.atari_iqn_network(4, num_cosines=0)
  network = hk.transform(networks.minatar_iqn_network(3))
  with pytest.raises(AssertionError):
    network.init(jax.random.PRNGKey(0), jnp.zeros((2, 10, 10, 4, 1)),
                 jnp.zeros((3, 5)))
