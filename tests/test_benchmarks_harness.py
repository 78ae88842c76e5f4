"""Tests for scripts.benchmarks.harness: interleaved rounds, their medians, the
table and its figures, the figures line."""

import json

from absl import flags
import jax.numpy as jnp
import pytest

from scripts.benchmarks import harness


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
  monkeypatch.setattr(harness.time, 'perf_counter', clock)
  calls = []
  assert harness.median_ms(lambda: calls.append(1), 3) == pytest.approx(5.0)
  assert len(calls) == 3


def test_a_choices_flag_takes_some_of_its_choices_each_once():
  values = flags.FlagValues()
  harness.define_choices('loops', ['python'], ('python', 'jitted'), 'Loops',
                         flag_values=values)
  values(['prog'])
  assert values.loops == ['python']
  values(['prog', '--loops=jitted,python'])
  assert values.loops == ['jitted', 'python']
  for bad in ('python,numba', 'jitted,jitted', ''):
    with pytest.raises(flags.IllegalFlagValueError,
                       match='name one or more of python,jitted, each once'):
      values(['prog', f'--loops={bad}'])


def test_timed_waits_for_jax_results_and_divides_by_the_calls(monkeypatch):
  assert harness.timed(lambda: jnp.ones(3) * 2)() >= 0.0
  monkeypatch.setattr(harness.time, 'perf_counter', _Clock([1.0, 0.008]))
  calls = []
  assert harness.timed(lambda: calls.append(1), 4)() == pytest.approx(2.0)
  assert len(calls) == 4
  with pytest.raises(ValueError, match='repeats must be positive'):
    harness.median_ms(lambda: None, 0)


def test_rounds_interleave_and_rotate_their_start():
  order, said = [], []

  def variant(name, values):
    values = iter(values)
    return lambda: order.append(name) or next(values)

  results = harness.measure(
      {'a': variant('a', [3.0, 1.0, 2.0]),
       'b': variant('b', [{'ms': 5.0, 'rate': 1.0}] * 3),
       'c': variant('c', [7, 8, 9])}, 3, said.append, order.append)
  # Round r measures every variant once, starting at the r-th, after
  # before_round(r).
  assert order == [0, 'a', 'b', 'c', 1, 'b', 'c', 'a', 2, 'c', 'a', 'b']
  assert results == {'a': {'value': [3.0, 1.0, 2.0]},
                     'b': {'ms': [5.0] * 3, 'rate': [1.0] * 3},
                     'c': {'value': [7.0, 8.0, 9.0]}}
  assert said == ['round 1/3: a 3, b 5, c 7', 'round 2/3: a 1, b 5, c 8',
                  'round 3/3: a 2, b 5, c 9']
  assert harness.summary(results)['a']['value'] == harness.Stats(2.0, 1.0,
                                                                 3.0)
  assert harness.medians(results) == {'a': {'value': 2.0},
                                      'b': {'ms': 5.0, 'rate': 1.0},
                                      'c': {'value': 8.0}}


def test_measure_refuses_bad_input_naming_the_fix():
  with pytest.raises(ValueError, match='set --repeats >= 1'):
    harness.measure({'a': lambda: 1.0}, 0)
  with pytest.raises(ValueError, match='give at least one'):
    harness.measure({}, 3)
  with pytest.raises(TypeError, match="variant 'a': value is 'fast'; return "
                     'numbers'):
    harness.measure({'a': lambda: 'fast'}, 1, None)
  changing = iter([{'ms': 1.0}, {'rate': 2.0}])
  with pytest.raises(ValueError, match="variant 'a' measured \\['rate'\\] in "
                     'round 2.*the same quantities every round'):
    harness.measure({'a': lambda: next(changing)}, 2, None)


def test_report_prints_the_table_and_returns_a_figure_per_cell(capsys):
  columns = {'frames/s': ('frames_per_s', 'frames/s'),
             'share': ('share', '%'), 'note': ('', '')}
  figures = harness.report(
      'atari.bench_x', 'Atari frames/s', ['mode', 'K'], columns,
      {('vector', 16): {'frames/s': '1,234 [1,100, 1,300]', 'share': '71%',
                        'note': 'fast'},
       ('reference', 1): {'frames/s': '400', 'share': '-', 'note': ''}},
      'llrrl')
  assert capsys.readouterr().out.splitlines() == [
      '', '| mode | K | frames/s | share | note |', '|---|---|---:|---:|---|',
      '| vector | 16 | 1,234 [1,100, 1,300] | 71% | fast |',
      '| reference | 1 | 400 | - |  |']
  assert [(f['key'], f['value'], f['unit']) for f in figures] == [
      ('atari.bench_x.frames_per_s:vector:16', '1,234', 'frames/s'),
      ('atari.bench_x.share:vector:16', '71', '%'),
      ('atari.bench_x.frames_per_s:reference:1', '400', 'frames/s')]
  assert figures[0]['what'] == ('Atari frames/s, vector 16: frames/s (median '
                                'of the rounds)')
  with pytest.raises(ValueError, match=r"row 'a': give 2 name part\(s\) and "
                     "the cells of \\['frames/s', 'share', 'note'\\]"):
    harness.report('p', 'c', ['mode', 'K'], columns, {'a': {}})


def test_figures_line_round_trips_as_the_last_line(capsys):
  figures = [harness.figure('atari.bench_env.frames_per_s:vector:16',
                            'Atari frames/s, vector mode, K = 16', '1,234',
                            'frames/s'),
             harness.figure('atari.bench_env.vs_reference:vector:16',
                            'over the reference mode', '2.50', 'x')]
  assert figures[0] == {'key': 'atari.bench_env.frames_per_s:vector:16',
                        'what': 'Atari frames/s, vector mode, K = 16',
                        'value': '1,234', 'unit': 'frames/s'}
  print('| mode | K |')
  harness.print_figures(figures)
  out = capsys.readouterr().out
  assert out.splitlines()[-1] == 'figures: ' + json.dumps(figures)
  assert harness.read_figures(out) == figures


def test_figures_refuse_numbers_repeated_keys_and_a_missing_line():
  with pytest.raises(TypeError, match='value must be a string'):
    harness.figure('a.b', 'what', 1.5, 'ms')
  with pytest.raises(ValueError, match='give a key and a what'):
    harness.figure('', 'what', '1.5', 'ms')
  one = harness.figure('a.b', 'what', '1.5', 'ms')
  with pytest.raises(ValueError, match=r"keys \['a.b'\] repeat"):
    harness.print_figures([one, one])
  with pytest.raises(ValueError, match='does not end with a `figures: `'):
    harness.read_figures('| a | b |\nfigures: []\ndone\n')


def test_machine_names_the_cpu_and_jax():
  text = harness.machine()
  assert 'cores' in text and 'jax ' in text and 'load average' in text
