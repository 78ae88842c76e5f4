"""Compose a torso and a quantile head into a Q-network."""

from typing import Callable, Literal, NamedTuple

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


def atari_quantile_network(
    num_actions: int, num_quantiles: int, head: Literal['fc', 'nc'] = 'fc',
    num_layers: int = 1, hidden_size: int = 512,
    nc_scale_activation: heads.ScaleActivation = 'relu',
) -> Callable[[jnp.ndarray], QuantileNetworkOutputs]:
  """Return the Atari network: DQN torso then an FC or NC quantile head."""
  if head == 'fc':
    head_fn = heads.fc_quantile_head(num_actions, num_quantiles, num_layers,
                                     hidden_size)
  elif head == 'nc':
    head_fn = heads.nc_quantile_head(num_actions, num_quantiles, num_layers,
                                     hidden_size, nc_scale_activation)
  else:
    raise ValueError(f"head must be 'fc' or 'nc', got {head!r}.")
  return quantile_network(torsos.dqn_torso(), head_fn)
