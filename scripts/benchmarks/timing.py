"""The one timing rule of the benchmarks: median milliseconds of repeated calls."""

import statistics
import time
from typing import Any, Callable

import jax


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
  """Return the median wall time of `repeats` calls of fn, in milliseconds.

  Each call's result is waited for (jax.block_until_ready), so asynchronous
  JAX dispatch is timed to its end; numpy results pass through unchanged.
  """
  if repeats < 1:
    raise ValueError(f'repeats must be positive, got {repeats}.')
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(1e3 * (time.perf_counter() - start))
  return statistics.median(times)
