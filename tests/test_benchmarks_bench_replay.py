"""Smoke test of the replay benchmark."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_fills_the_replay_and_times_sampling():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_replay', '--replay_capacity=2000',
       '--num_streams=4'], cwd=REPO, capture_output=True, text=True,
      timeout=120, check=True).stdout
  assert 'filled 2000 transitions' in out
  assert len(re.findall(r'sample\(32, stacks_last=\w+\): [0-9.]+ ms', out)) == 2


def test_refuses_a_capacity_not_divisible_by_the_streams():
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_replay', '--replay_capacity=10',
       '--num_streams=3'], cwd=REPO, capture_output=True, text=True,
      timeout=60)
  assert result.returncode != 0
  assert 'multiple of the streams' in result.stderr
