"""Tests for scripts.benchmarks.timing: the median of repeated calls, results awaited."""

import jax.numpy as jnp
import pytest

from scripts.benchmarks import timing


class _Clock:
  """A perf_counter whose every call advances by the next listed step."""

  def __init__(self, steps):
    self.now, self._steps = 0.0, iter(steps)

  def __call__(self):
    self.now += next(self._steps)
    return self.now


def test_median_of_the_calls_in_milliseconds(monkeypatch):
  # Three calls lasting 5, 1 and 30 ms (each start read 1 s after the end).
  clock = _Clock([1.0, 0.005, 1.0, 0.001, 1.0, 0.030])
  monkeypatch.setattr(timing.time, 'perf_counter', clock)
  calls = []
  assert timing.median_ms(lambda: calls.append(1), 3) == pytest.approx(5.0)
  assert len(calls) == 3


def test_waits_for_jax_results_and_refuses_no_repeats():
  assert timing.median_ms(lambda: jnp.ones(3) * 2, 2) >= 0.0
  with pytest.raises(ValueError, match='repeats must be positive'):
    timing.median_ms(lambda: None, 0)
