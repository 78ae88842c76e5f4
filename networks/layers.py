"""Linear and convolutional layers with DQN's legacy initialisation (as DQN Zoo)."""

import contextlib
import contextvars
from typing import Callable, Sequence, Tuple

import chex
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


def patches_conv(inputs: jnp.ndarray, w: jnp.ndarray,
                 stride: Tuple[int, int]) -> jnp.ndarray:
  """Return the VALID NHWC convolution of [B, H, W, C] by w [kh, kw, C, F].

  As patches (im2col) times the weights: slices and one matmul, whose
  gradients are slices and matmuls too.
  """
  kh, kw, c, _ = w.shape
  _, h, width, _ = inputs.shape
  oh, ow = (h - kh) // stride[0] + 1, (width - kw) // stride[1] + 1
  patches = jnp.concatenate([
      inputs[:, i:i + stride[0] * (oh - 1) + 1:stride[0],
             j:j + stride[1] * (ow - 1) + 1:stride[1], :]
      for i in range(kh) for j in range(kw)], axis=-1)  # (i, j, c) order.
  return patches @ w.reshape(kh * kw * c, -1)


_PATCHES_ON_CPU = contextvars.ContextVar('patches_on_cpu', default=False)


@contextlib.contextmanager
def convolutions_as_patches_on_cpu():
  """Trace `conv` layers in this block as patches times weights on a CPU.

  XLA:CPU runs the gradient's convolutions inside a loop or a branch body
  without its fast kernels (jax 0.10.2, Nature CNN: 76 against 7.5 ms per
  update inside a lax.scan, 2-core CPU); patches times weights is as fast
  there, equal to float rounding, but slower to compile. For programs whose
  updates run in such a body (the jitted loop's).
  """
  token = _PATCHES_ON_CPU.set(True)
  try:
    yield
  finally:
    _PATCHES_ON_CPU.reset(token)


class Conv2D(hk.Conv2D):
  """hk.Conv2D; batched NHWC VALID ones as patches on a CPU where asked.

  Its parameters are hk.Conv2D's (`convolutions_as_patches_on_cpu`).
  """

  def __call__(self, inputs: jnp.ndarray, **kwargs) -> jnp.ndarray:
    if not _PATCHES_ON_CPU.get():
      return super().__call__(inputs, **kwargs)
    chex.assert_rank(inputs, 4)
    w = hk.get_parameter(
        'w', self.kernel_shape + (inputs.shape[-1], self.output_channels),
        inputs.dtype, init=self.w_init)
    stride = tuple(self.stride)
    out = jax.lax.platform_dependent(
        inputs, w,
        cpu=lambda x, w: patches_conv(x, w, stride),
        default=lambda x, w: jax.lax.conv_general_dilated(
            x, w, window_strides=stride, padding='VALID',
            dimension_numbers=self.dimension_numbers))
    b = hk.get_parameter('b', (self.output_channels,), inputs.dtype,
                         init=self.b_init)
    return out + b


def conv(num_features: int, kernel_shape: Tuple[int, int],
         stride: Tuple[int, int], patches_on_cpu: bool = True) -> NetworkFn:
  """Return a VALID-padded NHWC convolution with DQN's legacy initialisation.

  `patches_on_cpu`: follow `convolutions_as_patches_on_cpu` (False: always
  hk.Conv2D's computation).
  """

  def net_fn(inputs):
    num_input_units = inputs.shape[-1] * kernel_shape[0] * kernel_shape[1]
    init = dqn_default_initializer(num_input_units)
    layer_class = Conv2D if patches_on_cpu else hk.Conv2D
    layer = layer_class(num_features, kernel_shape=kernel_shape, stride=stride,
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
