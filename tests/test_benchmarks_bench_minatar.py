"""Smoke test of the MinAtar benchmark (tiny settings; numbers not checked)."""

import os
import re
import subprocess
import sys

from scripts.benchmarks import bench_minatar
from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_prints_the_table_and_the_study_estimate():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_minatar', '--num_steps=100',
       '--repeats=2', '--timing_repeats=2', '--replay_capacity=1000',
       '--num_quantiles=5', '--hidden_size=8', '--configs=QR-DQN-0,CR-DQN-K8'],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      check=True).stdout
  assert 'XLA single-threaded' in out and 'load average' in out
  rows = re.findall(r'^\| (QR-DQN-0|CR-DQN-K8) \|(.*)\|$', out, re.MULTILINE)
  assert [name for name, _ in rows] == ['QR-DQN-0', 'CR-DQN-K8']
  for _, cells in rows:
    values = [c.strip().rstrip('%') for c in cells.split('|')]
    assert len(values) == 9 and all(float(v) >= 0 for v in values), cells
  # The estimate averages the K = 1 configurations only.
  assert re.search(r'study estimate: --train_step_ms=[0-9.]+ '
                   r'--eval_step_ms=[0-9.]+ \(mean over 1 K=1', out), out
  # The last line holds the table's cells and the estimate.
  figures = {f['key']: f for f in harness.read_figures(out)}
  for name, cells in rows:
    values = [c.strip().rstrip('%') for c in cells.split('|')]
    keys = [f'minatar.bench_minatar.{quantity}:{name}' for quantity, _ in
            bench_minatar.COLUMNS.values()]
    assert [figures[k]['value'] for k in keys] == values
  assert figures['minatar.bench_minatar.updates_share:QR-DQN-0'][
      'unit'] == '%'
  train = figures['minatar.bench_minatar.study_train_step_ms']['value']
  evaluation = figures['minatar.bench_minatar.study_eval_step_ms']['value']
  assert (f'--train_step_ms={train} --eval_step_ms={evaluation} ') in out


def test_refuses_unknown_configurations():
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_minatar', '--configs=DQN'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert result.returncode != 0 and 'Unknown --configs' in result.stderr
