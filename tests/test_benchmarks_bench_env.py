"""Smoke test of the environment benchmark on a real ROM."""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_prints_frames_per_second_for_both_modes():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_env', '--environment_name=pong',
       '--num_frames=800', '--num_repeats=1', '--num_envs=1,2'],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      check=True).stdout
  rows = re.findall(r'^\| (reference|vector) \| (\d+) \| (\d+) \|', out,
                    re.MULTILINE)
  assert {(mode, k) for mode, k, _ in rows} == {
      ('reference', '1'), ('vector', '1'), ('vector', '2')}, out
  assert all(int(rate) > 0 for _, _, rate in rows)
