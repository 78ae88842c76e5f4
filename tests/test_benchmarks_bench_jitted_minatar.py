"""Tests for scripts.benchmarks.bench_jitted_minatar: its table and figures
from fake benches (the benchmark itself prints measured numbers and is not a
test; a real run compiles the jitted loop)."""

import types

from scripts.benchmarks import bench_jitted_minatar


def _groups():
  python = types.SimpleNamespace(train_rates=[400.0, 500.0, 450.0],
                                 replay=types.SimpleNamespace(nbytes=2e6))
  jitted = types.SimpleNamespace(rates=[300.0, 320.0, 310.0], num_seeds=4,
                                 replay_bytes=1.5e6, learner_bytes=0.5e6)
  return {'CR-DQN': [python, jitted]}


def test_rows_compare_the_jitted_total_with_the_python_loop():
  rows = bench_jitted_minatar.table_rows(_groups())
  assert rows == [
      ['CR-DQN', 'python', 1, '450', '450', '1.00x',
       'replay 2.0 MB (host, uint8)'],
      ['CR-DQN', 'jitted', 4, '310', '1240', '2.76x',
       'replay 1.5 MB + learner 0.5 MB']]


def test_figures_hold_the_tables_steps_per_second():
  rows = bench_jitted_minatar.table_rows(_groups())
  figures = {f['key']: f for f in bench_jitted_minatar.figures(rows,
                                                               'breakout')}
  key = 'minatar.bench_jitted_minatar.{}:CR-DQN:{}'.format
  assert figures[key('train_steps_per_s_per_seed', 'jitted:4')]['value'] == (
      '310')
  assert figures[key('train_steps_per_s_total', 'jitted:4')]['value'] == (
      '1240')
  ratio = figures[key('vs_python', 'jitted:4')]
  assert (ratio['value'], ratio['unit']) == ('2.76', 'x')
  assert figures[key('vs_python', 'python:1')]['value'] == '1.00'
  assert len(figures) == 6
  assert all('breakout' in f['what'] for f in figures.values())
