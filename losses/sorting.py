"""Fast sorting and counting of float atoms on every backend.

XLA's CPU sort runs a compiled comparator per comparison, except for a single
integer operand, which it sorts about 6x faster (measured: 32 rows of 402
float32 in 1.5 ms as floats, 0.25 ms as int32 keys). So floats are mapped to
integer keys with the same total order, sorted, and mapped back; ranks come
from searching the sorted keys, not from carrying indices through the sort
(a multi-operand sort is back on the slow path).
"""

import jax
import jax.numpy as jnp
from jax import lax

# Below this many sorted keys a blocked linear count beats a binary search
# (measured on CPU, 32 rows: 0.13 ms vs 0.19 ms at 201 keys; 5 ms vs 160 ms
# the other way round at 4000 keys).
_BLOCKED_COUNT_MAX_KEYS = 512
_BLOCK = 16


def _int_type(dtype):
  return {2: jnp.int16, 4: jnp.int32, 8: jnp.int64}[jnp.dtype(dtype).itemsize]


def order_keys(x):
  """Return integer keys whose order is the float order of x (−0 = +0).

  Keys sort as floats do in total order: −NaN < −inf < ... < 0 < ... < inf
  < NaN. Map back with keys_to_floats.
  """
  x = jnp.where(x == 0, jnp.zeros_like(x), x)  # one key for -0 and +0
  bits = lax.bitcast_convert_type(x, _int_type(x.dtype))
  sign_bit = jnp.iinfo(bits.dtype).bits - 1
  # Negative floats order backwards: flip all but the sign bit.
  return bits ^ ((bits >> sign_bit) & jnp.iinfo(bits.dtype).max)


def keys_to_floats(keys, dtype):
  """Return the floats whose order_keys are keys."""
  sign_bit = jnp.iinfo(keys.dtype).bits - 1
  bits = keys ^ ((keys >> sign_bit) & jnp.iinfo(keys.dtype).max)
  return lax.bitcast_convert_type(bits, dtype)


def sort_keys(keys):
  """Sort integer keys along the last axis (XLA's fast single-operand path)."""
  return lax.sort(keys, dimension=keys.ndim - 1, is_stable=True)


def count_less(sorted_keys, queries):
  """Return, per query, how many sorted_keys (same row) are < the query.

  sorted_keys: [..., L] sorted integer keys; queries: [..., Q] of the same
  dtype and leading shape. Returns int32 [..., Q]. For "<=", pass queries + 1.
  """
  length = sorted_keys.shape[-1]
  if length <= _BLOCKED_COUNT_MAX_KEYS:
    return _count_less_blocked(sorted_keys, queries)
  return _count_less_binary(sorted_keys, queries)


def _count_less_blocked(sorted_keys, queries):
  """Count by comparing with block ends, then within one block of 16."""
  length = sorted_keys.shape[-1]
  num_blocks = -(-length // _BLOCK)
  pad = jnp.full(sorted_keys.shape[:-1] + (num_blocks * _BLOCK - length,),
                 jnp.iinfo(sorted_keys.dtype).max, sorted_keys.dtype)
  padded = jnp.concatenate([sorted_keys, pad], axis=-1)
  block_ends = padded[..., _BLOCK - 1::_BLOCK]
  full_blocks = jnp.sum(block_ends[..., None, :] < queries[..., :, None],
                        axis=-1, dtype=jnp.int32)
  block = jnp.minimum(full_blocks, num_blocks - 1)
  index = block[..., None] * _BLOCK + jnp.arange(_BLOCK, dtype=jnp.int32)
  values = jnp.take_along_axis(
      padded, index.reshape(index.shape[:-2] + (-1,)), axis=-1,
      mode='promise_in_bounds').reshape(index.shape)
  inside = (values < queries[..., None]) & (index < length)
  return block * _BLOCK + jnp.sum(inside, axis=-1, dtype=jnp.int32)


def _count_less_binary(sorted_keys, queries):
  """Count by a branchless binary search (one gather per halving)."""
  length = sorted_keys.shape[-1]
  rows = sorted_keys.reshape(-1, length)
  flat = rows.reshape(-1)
  offsets = (jnp.arange(rows.shape[0], dtype=jnp.int32) * length).reshape(
      sorted_keys.shape[:-1] + (1,))
  count = jnp.zeros(queries.shape, jnp.int32)
  step = 1 << (length.bit_length() - 1)
  while step:
    candidate = count + step
    index = jnp.minimum(candidate - 1, length - 1) + offsets
    value = flat.at[index].get(mode='promise_in_bounds')
    count = jnp.where((candidate <= length) & (value < queries), candidate,
                      count)
    step >>= 1
  return count
