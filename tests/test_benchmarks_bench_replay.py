"""Smoke test of the replay benchmark."""

import os
import re
import subprocess
import sys

from scripts.benchmarks import timing

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_fills_the_replay_and_times_sampling():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_replay', '--replay_capacity=2000',
       '--num_streams=4'], cwd=REPO, capture_output=True, text=True,
      timeout=120, check=True).stdout
  assert 'filled 2000 transitions' in out
  times = re.findall(r'sample\(32, stacks_last=(\w+)\): ([0-9.]+) ms', out)
  assert len(times) == 2
  figures = {f['key']: f for f in timing.read_figures(out)}
  for stacks_last, ms in times:
    assert figures[f'replay.bench_replay.sample_32:stacks_last={stacks_last}'
                   ] == timing.figure(
                       f'replay.bench_replay.sample_32:stacks_last='
                       f'{stacks_last}', f'FrameReplay of 2,000 transitions '
                       f'in 4 streams: sample(32, stacks_last={stacks_last})'
                       ', median of 200', ms, 'ms')
  assert f"arrays {figures['replay.bench_replay.arrays']['value']} GB" in out
  assert (f"resident {figures['replay.bench_replay.resident_full']['value']} "
          'GB') in out


def test_refuses_a_capacity_not_divisible_by_the_streams():
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_replay', '--replay_capacity=10',
       '--num_streams=3'], cwd=REPO, capture_output=True, text=True,
      timeout=60)
  assert result.returncode != 0
  assert 'multiple of the streams' in result.stderr
