"""The implicit quantile network (IQN, Dabney et al., 2018), as DQN Zoo builds it.

The torso embeds the observation into [B, D]; each level τ is embedded by
cosines cos(π i τ), i = 1..C (DQN Zoo's indexing; the paper writes i = 0..C−1,
whose i = 0 feature is a constant the layer's bias already provides), a
linear layer to D and a ReLU; the two embeddings are multiplied element-wise
and a head (ReLU layers, then linear to A) maps each product to A values.
"""

from typing import Callable, Sequence

import chex
import haiku as hk
import jax
import jax.numpy as jnp

from networks import layers
from networks import quantile_network
from networks import torsos

# DQN Zoo's IQN: 64 cosines, a head of one 512-unit layer.
NUM_COSINES = 64

IqnNetworkFn = Callable[[jnp.ndarray, jnp.ndarray],
                        quantile_network.QuantileNetworkOutputs]


def cosine_features(levels: jnp.ndarray, num_cosines: int) -> jnp.ndarray:
  """Return cos(π i τ) for i = 1..num_cosines: [B, N] -> [B, N, num_cosines]."""
  frequencies = jnp.pi * jnp.arange(1, num_cosines + 1, dtype=jnp.float32)
  return jnp.cos(levels.astype(jnp.float32)[..., None] * frequencies)


def iqn_network(torso: layers.NetworkFn, num_actions: int,
                num_cosines: int = NUM_COSINES,
                hidden_sizes: Sequence[int] = (512,)) -> IqnNetworkFn:
  """Return fn(observations, levels [B, N]) -> QuantileNetworkOutputs.

  q_atoms [B, A, N]: atom n of action a is the value at level levels[b, n]
  (DQN Zoo's IQN returns [B, N, A]); q_values [B, A], their mean, carry no
  gradient. The levels are inputs: the caller samples them (DQN Zoo: uniform
  on [0, 1), fresh for each state and each use), so the atoms are samples
  of the return distribution, not sorted quantiles.
  """
  for name, value in (('num_actions', num_actions),
                      ('num_cosines', num_cosines)):
    if int(value) != value or value < 1:
      raise ValueError(f'{name} must be an integer >= 1, got {value!r}.')
  hidden_sizes = tuple(hidden_sizes)

  def net_fn(observations, levels):
    chex.assert_rank(levels, 2)
    chex.assert_equal_shape_prefix([observations, levels], 1)
    state_embedding = torso(observations)
    chex.assert_rank(state_embedding, 2)
    batch_size, width = state_embedding.shape
    num_levels = levels.shape[1]
    with hk.name_scope('iqn_level_embedding'):
      level_embedding = jax.nn.relu(layers.linear(width)(
          cosine_features(levels, num_cosines)))  # [B, N, D]
    products = level_embedding * state_embedding[:, None, :]
    with hk.name_scope('iqn_head'):
      flat = jnp.reshape(products, (batch_size * num_levels, width))
      values = layers.linear(num_actions)(layers.relu_mlp(hidden_sizes)(flat))
    q_atoms = jnp.swapaxes(
        jnp.reshape(values, (batch_size, num_levels, num_actions)), 1, 2)
    chex.assert_shape(q_atoms, (batch_size, num_actions, num_levels))
    q_values = jax.lax.stop_gradient(jnp.mean(q_atoms, axis=-1))
    return quantile_network.QuantileNetworkOutputs(q_atoms=q_atoms,
                                                   q_values=q_values)

  return net_fn


def atari_iqn_network(num_actions: int, num_cosines: int = NUM_COSINES,
                      hidden_size: int = 512, torso: str = 'dqn'
                      ) -> IqnNetworkFn:
  """Return DQN Zoo's Atari IQN: the DQN torso (D = 3136), a 512-unit head.

  `torso`: a name of `torsos.ATARI_TORSOS` ('der': D = 576).
  """
  if torso not in torsos.ATARI_TORSOS:
    raise ValueError(f'torso must be one of {sorted(torsos.ATARI_TORSOS)}, '
                     f'got {torso!r}.')
  return iqn_network(torsos.ATARI_TORSOS[torso](), num_actions, num_cosines,
                     (hidden_size,))


def minatar_iqn_network(num_actions: int, num_cosines: int = NUM_COSINES,
                        hidden_size: int = 128) -> IqnNetworkFn:
  """Return the MinAtar IQN: MinAtar's torso (D = 1024), a 128-unit head.

  The head's hidden layer is the one of Young & Tian's DQN, as in
  networks.minatar_quantile_network.
  """
  return iqn_network(torsos.minatar_torso(), num_actions, num_cosines,
                     (hidden_size,))
