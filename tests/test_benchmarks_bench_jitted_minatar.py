"""Smoke test of the jitted MinAtar benchmark (tiny settings; numbers not
checked): its table and figures, the jitted loop beside the Python loop."""

import os
import subprocess
import sys

import pytest

from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.mark.end_to_end
def test_the_jitted_loop_beside_the_python_loop():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_jitted_minatar',
       '--configs=QR-DQN-0', '--num_seeds=2', '--num_steps=8', '--repeats=1',
       '--replay_capacity=1000', '--num_quantiles=5', '--hidden_size=8'],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      check=True).stdout
  figures = {f['key']: f for f in harness.read_figures(out)}
  key = 'minatar.bench_jitted_minatar.{}:QR-DQN-0:{}'.format
  for loop, seeds in (('python', 1), ('jitted', 2)):
    cells = [figures[key(q, f'{loop}:{seeds}')]['value'] for q in (
        'train_steps_per_s_per_seed', 'train_steps_per_s_total', 'vs_python')]
    assert f'| QR-DQN-0 | {loop} | {seeds} | {" | ".join(cells)}x |' in out
  assert figures[key('vs_python', 'python:1')]['value'] == '1.00'
  assert figures[key('vs_python', 'jitted:2')]['unit'] == 'x'
