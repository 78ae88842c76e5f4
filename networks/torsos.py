"""Torsos: map observations to a flat embedding [B, D]."""

from typing import Callable, Dict, Sequence

import chex
import haiku as hk
import jax
import jax.numpy as jnp

from networks import layers


def _pixel_torso(name: str, convs) -> layers.NetworkFn:
  """Return a torso of ReLU convolutions `convs` ((filters, kernel, stride))
  over uint8 frames scaled from [0, 255] to [0, 1]: [B, H, W, C] -> [B, D]."""

  def net_fn(inputs):
    chex.assert_rank(inputs, 4)
    with hk.name_scope(name):
      x = inputs.astype(jnp.float32) / 255.0
      for filters, kernel, stride in convs:
        x = jax.nn.relu(layers.conv(filters, kernel_shape=(kernel, kernel),
                                    stride=(stride, stride))(x))
      return hk.Flatten()(x)

  return net_fn


def dqn_torso() -> layers.NetworkFn:
  """Return DQN's convolutional torso: uint8 [B, H, W, C] -> float32 [B, D].

  Frames are scaled from [0, 255] to [0, 1]. For 84x84 inputs D = 7*7*64 = 3136.
  """
  return _pixel_torso('dqn_torso', ((32, 8, 4), (64, 4, 2), (64, 3, 1)))


def der_torso() -> layers.NetworkFn:
  """Return Data-Efficient Rainbow's torso: uint8 [B, H, W, C] -> [B, D].

  van Hasselt et al. (2019), as Kaixhin/Rainbow's `--architecture
  data-efficient` (model.py), the code DER's settings were published with:
  convolutions of 32 then 64 filters, 5x5, stride 5, no padding (VALID),
  each followed by a ReLU; the heads' hidden layer of 256 units is
  `--hidden_size=256`. Frames are scaled to [0, 1] as in `dqn_torso`. For
  84x84 inputs: 84 -> 16 -> 3, D = 3*3*64 = 576. (Dopamine's DER.gin runs
  its FullRainbowNetwork, the Nature torso and 512 units, instead.)
  """
  return _pixel_torso('der_torso', ((32, 5, 5), (64, 5, 5)))


# The Atari torsos by name (`--torso`); the settings' choices equal these (a
# test keeps them equal).
ATARI_TORSOS: Dict[str, Callable[[], layers.NetworkFn]] = {
    'dqn': dqn_torso, 'der': der_torso}


def minatar_torso() -> layers.NetworkFn:
  """Return MinAtar's torso (Young & Tian, 2019): [B, H, W, C, S] -> [B, D].

  One 3x3 convolution of 16 features, stride 1, VALID padding (as their
  PyTorch DQN), ReLU, flatten: D = 8*8*16 = 1024 for 10x10 grids. Inputs are
  0/1 object channels (not scaled); the stack axis S is merged into channels.
  """

  def net_fn(inputs):
    chex.assert_rank(inputs, 5)
    with hk.name_scope('minatar_torso'):
      x = inputs.astype(jnp.float32)
      x = jnp.reshape(x, x.shape[:3] + (x.shape[3] * x.shape[4],))
      # XLA's own convolution in every loop: this one is small, and patches
      # would compile slower than they run faster (layers.conv).
      x = jax.nn.relu(layers.conv(16, kernel_shape=(3, 3), stride=(1, 1),
                                  patches_on_cpu=False)(x))
      return hk.Flatten()(x)

  return net_fn


def mlp_torso(hidden_sizes: Sequence[int]) -> layers.NetworkFn:
  """Return flatten then ReLU MLP: float [B, ...] -> [B, D] (tiny test tasks).

  With `hidden_sizes=()` this only flattens, e.g. to feed the constant input of
  the synthetic experiment straight into a head.
  """

  def net_fn(inputs):
    chex.assert_rank(inputs, {2, 3, 4, 5})
    inputs = hk.Flatten()(inputs.astype(jnp.float32))
    with hk.name_scope('mlp_torso'):
      return layers.relu_mlp(hidden_sizes)(inputs)

  return net_fn
