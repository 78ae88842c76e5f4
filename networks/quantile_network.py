"""Compose a torso and a quantile head into a Q-network."""

from typing import Callable, NamedTuple

import chex
import jax
import jax.numpy as jnp

from networks import heads
from networks import layers
from networks import torsos


class QuantileNetworkOutputs(NamedTuple):
  q_atoms: jnp.ndarray   # [B, A, N]
  q_values: jnp.ndarray  # [B, A], mean over atoms (gradient stopped)


def quantile_network(torso: layers.NetworkFn, head: layers.NetworkFn
                     ) -> Callable[[jnp.ndarray], QuantileNetworkOutputs]:
  """Return fn(observations) -> QuantileNetworkOutputs, for `hk.transform`.

  As in DQN Zoo, `q_values` carry no gradient: they only select actions.
  """

  def net_fn(observations):
    q_atoms = head(torso(observations))
    chex.assert_rank(q_atoms, 3)
    chex.assert_equal_shape_prefix([q_atoms, observations], 1)
    q_values = jax.lax.stop_gradient(jnp.mean(q_atoms, axis=-1))
    return QuantileNetworkOutputs(q_atoms=q_atoms, q_values=q_values)

  return net_fn


def _fc_head(num_actions, num_quantiles, num_layers, hidden_size,
             unused_nc_scale_activation):
  return heads.fc_quantile_head(num_actions, num_quantiles, num_layers,
                                hidden_size)


# The heads by name: fn(num_actions, num_quantiles, num_layers, hidden_size,
# nc_scale_activation) -> the head. The settings accept the names that the
# project's agents declare; a test keeps the two equal.
HEADS = {'fc': _fc_head, 'nc': heads.nc_quantile_head}


def _head(num_actions: int, num_quantiles: int, head: str, num_layers: int,
          hidden_size: int, nc_scale_activation: heads.ScaleActivation
          ) -> layers.NetworkFn:
  if head not in HEADS:
    raise ValueError(f'head must be one of {sorted(HEADS)}, got {head!r}.')
  return HEADS[head](num_actions, num_quantiles, num_layers, hidden_size,
                     nc_scale_activation)


def _atari_torso(name: str) -> layers.NetworkFn:
  if name not in torsos.ATARI_TORSOS:
    raise ValueError(f'torso must be one of {sorted(torsos.ATARI_TORSOS)}, '
                     f'got {name!r}.')
  return torsos.ATARI_TORSOS[name]()


def atari_quantile_network(
    num_actions: int, num_quantiles: int, head: str = 'fc',
    num_layers: int = 1, hidden_size: int = 512,
    nc_scale_activation: heads.ScaleActivation = 'relu', torso: str = 'dqn',
) -> Callable[[jnp.ndarray], QuantileNetworkOutputs]:
  """Return the Atari network: a torso (`torsos.ATARI_TORSOS`), then a head."""
  return quantile_network(
      _atari_torso(torso),
      _head(num_actions, num_quantiles, head, num_layers, hidden_size,
            nc_scale_activation))


def minatar_quantile_network(
    num_actions: int, num_quantiles: int, head: str = 'fc',
    num_layers: int = 1, hidden_size: int = 128,
    nc_scale_activation: heads.ScaleActivation = 'relu',
) -> Callable[[jnp.ndarray], QuantileNetworkOutputs]:
  """Return the MinAtar network: MinAtar's torso, then a quantile head.

  Young & Tian's DQN has one hidden layer of 128 units before its output; here
  that layer is the head's (FC, or each NC branch's), and the output is the
  head's A x N atoms.
  """
  return quantile_network(
      torsos.minatar_torso(),
      _head(num_actions, num_quantiles, head, num_layers, hidden_size,
            nc_scale_activation))
