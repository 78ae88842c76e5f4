"""Tests of losses.sorting: float order keys and batched counting."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from losses import sorting


def _special_floats(dtype):
  info = np.finfo(dtype)
  return np.array([-np.inf, -info.max, -1.5, -info.tiny, -info.tiny / 2**20,
                   -0.0, 0.0, info.tiny / 2**20, info.tiny, 1.0, 1.5,
                   info.max, np.inf], dtype)


@pytest.mark.parametrize('dtype', [np.float32, np.float64])
def test_keys_follow_float_order_and_map_back(dtype):
  with jax.enable_x64(True):
    values = _special_floats(dtype)
    keys = np.asarray(sorting.order_keys(jnp.asarray(values)))
    assert keys.dtype == (np.int32 if dtype == np.float32 else np.int64)
    assert keys[5] == keys[6]  # −0 and +0 share a key.
    # XLA:CPU flushes subnormals to zero: they may share 0's key, in order.
    assert np.all(np.diff(np.delete(keys, 5)) >= 0)
    normal = [0, 1, 2, 3, 6, 8, 9, 10, 11, 12]
    assert np.all(np.diff(keys[normal]) > 0)
    back = np.asarray(sorting.keys_to_floats(jnp.asarray(keys), dtype))
    np.testing.assert_array_equal(back[normal], np.where(values == 0, 0.0, values)[normal])
    rng = np.random.default_rng(0)
    random = (rng.normal(size=(3, 50)) * 10.0**rng.integers(-30, 30, size=(3, 50))).astype(dtype)
    got = sorting.keys_to_floats(sorting.sort_keys(sorting.order_keys(jnp.asarray(random))), dtype)
    np.testing.assert_array_equal(got, np.sort(random, axis=-1))


def test_nan_keys_sort_last():
  keys = sorting.sort_keys(sorting.order_keys(jnp.array([np.nan, 1.0, -np.inf])))
  assert np.isnan(sorting.keys_to_floats(keys, jnp.float32)[-1])


@pytest.mark.parametrize('length', [1, 15, 16, 17, 100, 512, 513, 1000])
def test_count_less_equals_searchsorted(length):
  rng = np.random.default_rng(length)
  sorted_keys = np.sort(rng.integers(-20, 20, size=(3, length)), axis=-1).astype(np.int32)
  queries = rng.integers(-25, 25, size=(3, 37)).astype(np.int32)
  got = jax.jit(sorting.count_less)(jnp.asarray(sorted_keys), jnp.asarray(queries))
  expected = [np.searchsorted(a, q, side='left') for a, q in zip(sorted_keys, queries)]
  np.testing.assert_array_equal(got, expected)
  for count in (sorting._count_less_blocked, sorting._count_less_binary):  # pylint: disable=protected-access
    np.testing.assert_array_equal(jax.jit(count)(sorted_keys, queries), expected)
  unbatched = jax.jit(sorting.count_less)(sorted_keys[0], queries[0])
  np.testing.assert_array_equal(unbatched, expected[0])
