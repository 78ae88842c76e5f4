"""The benchmarks' shared rules: median milliseconds of repeated calls, and
the last line of every benchmark, `figures: <JSON list>`."""

import json
import statistics
import time
from typing import Any, Callable, Dict, Iterable, List

import jax

FIGURES_PREFIX = 'figures: '
FIGURE_FIELDS = ('key', 'what', 'value', 'unit')


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


def figure(key: str, what: str, value: str, unit: str) -> Dict[str, str]:
  """Return one figure: its key, what it measures, its value as the table
  prints it, and its unit ('' for none)."""
  for name, field in zip(FIGURE_FIELDS, (key, what, value, unit)):
    if not isinstance(field, str):
      raise TypeError(f'figure {key!r}: {name} must be a string (the '
                      f'value as printed), got {field!r}.')
  if not key or not what:
    raise ValueError(f'figure {key!r}: give a key and a what.')
  return {'key': key, 'what': what, 'value': value, 'unit': unit}


def figures_line(figures: Iterable[Dict[str, str]]) -> str:
  """Return the line `figures: <JSON list>`; keys must be unique."""
  figures = list(figures)
  keys = [f['key'] for f in figures]
  repeated = sorted({k for k in keys if keys.count(k) > 1})
  if repeated:
    raise ValueError(f'figure keys {repeated} repeat: give each figure its '
                     'own key.')
  return FIGURES_PREFIX + json.dumps(figures)


def print_figures(figures: Iterable[Dict[str, str]]) -> None:
  """Print a benchmark's last line, `figures: <JSON list>`."""
  print(figures_line(figures), flush=True)


def read_figures(output: str) -> List[Dict[str, str]]:
  """Return the figures of a benchmark's output, read from its last line."""
  lines = output.rstrip('\n').splitlines()
  if not lines or not lines[-1].startswith(FIGURES_PREFIX):
    raise ValueError('the output does not end with a `figures: ` line: run '
                     'the benchmark to its end.')
  return json.loads(lines[-1][len(FIGURES_PREFIX):])
