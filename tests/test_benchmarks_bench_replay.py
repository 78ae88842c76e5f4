"""Smoke test of the replay benchmark."""

import os
import subprocess
import sys

from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run(*flags):
  return subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_replay', *flags],
      cwd=REPO, capture_output=True, text=True, timeout=120)


def test_fills_the_replay_and_times_sampling():
  out = _run('--replay_capacity=2000', '--num_streams=4', '--repeats=5')
  assert out.returncode == 0, out.stderr
  assert 'filled 2000 transitions' in out.stdout
  figures = {f['key']: f['value'] for f in harness.read_figures(out.stdout)}
  for layout in ('True', 'False'):
    ms = figures[f'replay.bench_replay.sample_32:stacks_last={layout}']
    assert f'| stacks_last={layout} | {ms} |' in out.stdout and float(ms) > 0
  assert f"arrays {figures['replay.bench_replay.arrays']} GB" in out.stdout
  assert (f"resident {figures['replay.bench_replay.resident_full']} "
          'GB') in out.stdout


def test_refuses_a_capacity_not_divisible_by_the_streams():
  result = _run('--replay_capacity=10', '--num_streams=3')
  assert result.returncode != 0
  assert 'multiple of the streams' in result.stderr
