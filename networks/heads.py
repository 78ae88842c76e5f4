"""Quantile heads: map an embedding [B, D] to atoms [B, A, N]."""

from typing import Literal

import chex
import haiku as hk
import jax
import jax.numpy as jnp

from networks import layers

ScaleActivation = Literal['relu', 'softplus']
_SCALE_ACTIVATIONS = {'relu': jax.nn.relu, 'softplus': jax.nn.softplus}


def _check_sizes(num_actions, num_quantiles, num_layers, hidden_size):
  for name, value, minimum in (('num_actions', num_actions, 1),
                               ('num_quantiles', num_quantiles, 1),
                               ('num_layers', num_layers, 0),
                               ('hidden_size', hidden_size, 1)):
    if int(value) != value or value < minimum:
      raise ValueError(f'{name} must be an integer >= {minimum}, got {value!r}.')


def fc_quantile_head(num_actions: int, num_quantiles: int, num_layers: int,
                     hidden_size: int) -> layers.NetworkFn:
  """Return QR-DQN's head: `num_layers` ReLU layers, then linear to A x N atoms."""
  _check_sizes(num_actions, num_quantiles, num_layers, hidden_size)

  def net_fn(embedding):
    chex.assert_rank(embedding, 2)
    with hk.name_scope('fc_head'):
      hidden = layers.relu_mlp([hidden_size] * num_layers)(embedding)
      atoms = layers.linear(num_actions * num_quantiles)(hidden)
    atoms = jnp.reshape(atoms, (-1, num_actions, num_quantiles))
    chex.assert_shape(atoms, (embedding.shape[0], num_actions, num_quantiles))
    return atoms

  return net_fn


def nc_quantile_head(num_actions: int, num_quantiles: int, num_layers: int,
                     hidden_size: int,
                     scale_activation: ScaleActivation = 'relu'
                     ) -> layers.NetworkFn:
  """Return the non-crossing head: atoms alpha * psi + beta, non-decreasing.

  Two branches on the same embedding, each `num_layers` ReLU layers of
  `hidden_size` units. The quantile branch gives psi [B, A, N], the cumulative
  sum of a softmax over the N atoms of each action (non-decreasing in [0, 1]).
  The scale branch gives a scale alpha >= 0 (ReLU, or softplus to avoid a dying
  scale) and a location beta per action.
  """
  _check_sizes(num_actions, num_quantiles, num_layers, hidden_size)
  if scale_activation not in _SCALE_ACTIVATIONS:
    raise ValueError(f'scale_activation must be one of '
                     f'{sorted(_SCALE_ACTIVATIONS)}, got {scale_activation!r}.')
  activation = _SCALE_ACTIVATIONS[scale_activation]

  def net_fn(embedding):
    chex.assert_rank(embedding, 2)
    batch_size = embedding.shape[0]
    with hk.name_scope('nc_head'):
      with hk.name_scope('quantile_branch'):
        hidden = layers.relu_mlp([hidden_size] * num_layers)(embedding)
        logits = layers.linear(num_actions * num_quantiles)(hidden)
      with hk.name_scope('scale_branch'):
        hidden = layers.relu_mlp([hidden_size] * num_layers)(embedding)
        scale_location = layers.linear(num_actions * 2)(hidden)
    logits = jnp.reshape(logits, (-1, num_actions, num_quantiles))
    # Non-negative increments summed left to right: non-decreasing, in [0, 1].
    psi = jnp.cumsum(jax.nn.softmax(logits, axis=-1), axis=-1)
    scale_location = jnp.reshape(scale_location, (-1, num_actions, 2))
    alpha = activation(scale_location[..., 0:1])
    beta = scale_location[..., 1:2]
    atoms = alpha * psi + beta
    chex.assert_shape(atoms, (batch_size, num_actions, num_quantiles))
    return atoms

  return net_fn
