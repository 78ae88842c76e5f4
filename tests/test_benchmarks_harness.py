"""Tests for scripts.benchmarks.timing: the median of repeated calls, results
awaited; the figures line."""

import json

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


def test_figures_line_round_trips_as_the_last_line(capsys):
  figures = [timing.figure('atari.bench_env.frames_per_s:vector:16',
                           'Atari frames/s, vector mode, K = 16', '1,234',
                           'frames/s'),
             timing.figure('atari.bench_env.vs_reference:vector:16',
                           'over the reference mode', '2.50', 'x')]
  assert figures[0] == {'key': 'atari.bench_env.frames_per_s:vector:16',
                        'what': 'Atari frames/s, vector mode, K = 16',
                        'value': '1,234', 'unit': 'frames/s'}
  print('| mode | K |')
  timing.print_figures(figures)
  out = capsys.readouterr().out
  assert out.splitlines()[-1] == 'figures: ' + json.dumps(figures)
  assert timing.read_figures(out) == figures


def test_figures_refuse_numbers_repeated_keys_and_a_missing_line():
  with pytest.raises(TypeError, match='value must be a string'):
    timing.figure('a.b', 'what', 1.5, 'ms')
  with pytest.raises(ValueError, match='give a key and a what'):
    timing.figure('', 'what', '1.5', 'ms')
  one = timing.figure('a.b', 'what', '1.5', 'ms')
  with pytest.raises(ValueError, match=r"keys \['a.b'\] repeat"):
    timing.figures_line([one, one])
  with pytest.raises(ValueError, match='does not end with a `figures: `'):
    timing.read_figures('| a | b |\nfigures: []\ndone\n')
