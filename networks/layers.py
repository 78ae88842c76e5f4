"""Linear and convolutional layers with DQN's legacy initialisation (as DQN Zoo)."""

from typing import Callable, Sequence, Tuple

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np

NetworkFn = Callable[[jnp.ndarray], jnp.ndarray]


def dqn_default_initializer(num_input_units: int) -> hk.initializers.Initializer:
  """Return U(-c, c) with c = 1/sqrt(fan_in), used for weights and biases.

  This is DQN Zoo's legacy scheme. It is also PyTorch's default for `nn.Linear`
  and `nn.Conv2d` (weights and biases), so it matches PyTorch reference code.
  """
  max_val = np.sqrt(1.0 / num_input_units)
  return hk.initializers.RandomUniform(-max_val, max_val)


def linear(num_outputs: int) -> NetworkFn:
  """Return a linear layer with DQN's legacy initialisation."""

  def net_fn(inputs):
    init = dqn_default_initializer(inputs.shape[-1])
    return hk.Linear(num_outputs, w_init=init, b_init=init)(inputs)

  return net_fn


def conv(num_features: int, kernel_shape: Tuple[int, int],
         stride: Tuple[int, int]) -> NetworkFn:
  """Return a VALID-padded NHWC convolution with DQN's legacy initialisation."""

  def net_fn(inputs):
    num_input_units = inputs.shape[-1] * kernel_shape[0] * kernel_shape[1]
    init = dqn_default_initializer(num_input_units)
    layer = hk.Conv2D(num_features, kernel_shape=kernel_shape, stride=stride,
                      padding='VALID', w_init=init, b_init=init)
    return layer(inputs)

  return net_fn


def relu_mlp(hidden_sizes: Sequence[int]) -> NetworkFn:
  """Return linear layers of the given sizes, each followed by a ReLU."""
  hidden_sizes = tuple(hidden_sizes)

  def net_fn(inputs):
    for size in hidden_sizes:
      inputs = jax.nn.relu(linear(size)(inputs))
    return inputs

  return net_fn
