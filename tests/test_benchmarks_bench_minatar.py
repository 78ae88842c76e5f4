"""Smoke test of the MinAtar benchmark, both loops (tiny settings; numbers
not checked)."""

import os
import re
import subprocess
import sys

import pytest

from scripts.benchmarks import bench_minatar
from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*flags):
  return subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_minatar', *flags],
      cwd=REPO, capture_output=True, text=True, timeout=600)


@pytest.mark.end_to_end
def test_both_loops_print_their_tables_and_the_study_estimate():
  result = _run('--loops=python,jitted', '--num_seeds=2', '--num_steps=96',
                '--repeats=2', '--timing_repeats=2', '--replay_capacity=1000',
                '--num_quantiles=5', '--hidden_size=8',
                '--configs=QR-DQN-0,CR-DQN-K8')
  assert result.returncode == 0, result.stderr
  out = result.stdout
  assert 'XLA single-threaded' in out and 'load average' in out
  rows = re.findall(r'^\| (QR-DQN-0|CR-DQN-K8) \|(.*)\|$', out, re.MULTILINE)
  python_rows = [(name, cells) for name, cells in rows
                 if len(cells.split('|')) == 9]
  assert [name for name, _ in python_rows] == ['QR-DQN-0', 'CR-DQN-K8']
  figures = {f['key']: f for f in harness.read_figures(out)}
  for name, cells in python_rows:  # The figures are the table's cells.
    values = [c.strip().rstrip('%') for c in cells.split('|')]
    assert all(float(v) >= 0 for v in values), cells
    assert [figures[f'minatar.bench_minatar.{quantity}:{name}']['value']
            for quantity, _ in bench_minatar.COLUMNS.values()] == values
  assert figures['minatar.bench_minatar.updates_share:QR-DQN-0'][
      'unit'] == '%'
  # The estimate averages the K = 1 configurations only.
  assert re.search(r'study estimate: --train_step_ms=[0-9.]+ '
                   r'--eval_step_ms=[0-9.]+ \(mean over 1 K=1', out), out
  train = figures['minatar.bench_minatar.study_train_step_ms']['value']
  evaluation = figures['minatar.bench_minatar.study_eval_step_ms']['value']
  assert f'--train_step_ms={train} --eval_step_ms={evaluation} ' in out
  # The loops side by side: the Python loop's rate is the first table's.
  key = 'minatar.bench_minatar.loops.{}:{}:{}'.format
  for name in ('QR-DQN-0', 'CR-DQN-K8'):
    python = figures[key('train_steps_per_s_per_seed', name, 'python:1')]
    assert python['value'] == figures[
        f'minatar.bench_minatar.train_steps_per_s:{name}']['value']
    assert figures[key('vs_python', name, 'python:1')]['value'] == '1.00'
    for loop, seeds in (('python', 1), ('jitted', 2)):
      cells = [figures[key(q, name, f'{loop}:{seeds}')]['value'] for q in (
          'train_steps_per_s_per_seed', 'train_steps_per_s_total',
          'vs_python')]
      assert f'| {name} | {loop} | {seeds} | {" | ".join(cells)}x |' in out
      assert int(cells[1]) == pytest.approx(seeds * int(cells[0]), abs=1)


def test_loop_cells_without_the_python_loop_have_no_ratio():
  cells = bench_minatar.loop_cells({'CR-DQN:jitted:4': 250.0},
                                   {'CR-DQN:jitted:4': '1 MB'})
  assert cells == {('CR-DQN', 'jitted', 4): {
      'train steps/s per seed': '250', 'train steps/s total': '1000',
      'vs python': '-', 'memory per seed': '1 MB'}}


def test_refuses_unknown_configurations():
  result = _run('--configs=CR-DQN,DQN')
  assert result.returncode != 0
  assert 'name one or more of QR-DQN-1,' in result.stderr
  assert ',CR-DQN-K8,CR-DQN-MQ,IQN,CR-IQN, each once' in result.stderr
