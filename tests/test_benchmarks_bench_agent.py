"""Tests for scripts.benchmarks.bench_agent: its modes, and a tiny MinAtar run
end to end (its numbers not checked)."""

import os
import subprocess
import sys

import pytest

from scripts.benchmarks import bench_agent
from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_modes_parse_with_reference_first():
  Mode = bench_agent.Mode
  modes = bench_agent.parse_modes(
      'reference:1,vector:4, vector:16:u4,vector:8:device,vector:16:u8:device')
  assert modes == [Mode('reference', 1), Mode('vector', 4),
                   Mode('vector', 16, 4), Mode('vector', 8, 1, True),
                   Mode('vector', 16, 8, True)]
  assert [m.name for m in modes[2:]] == [
      'vector K=16 U=4', 'vector K=8 device replay',
      'vector K=16 U=8 device replay']


@pytest.mark.parametrize('text,message', [
    ('reference:1,gpu:4', "Bad mode 'gpu:4'"),
    ('reference:1,vector:0', "Bad mode 'vector:0'"),
    ('reference:1,vector', "Bad mode 'vector'"),
    ('reference:1,vector:4:u0', "Bad mode 'vector:4:u0'"),
    ('reference:1,vector:4:u2:u4', "Bad mode 'vector:4:u2:u4'"),
    ('reference:1,vector:4:host', "Bad mode 'vector:4:host'"),
    ('vector:16,reference:1', 'The first mode must be reference:1'),
])
def test_bad_modes_are_refused(text, message):
  with pytest.raises(ValueError, match=message):
    bench_agent.parse_modes(text)


@pytest.mark.end_to_end
def test_a_tiny_minatar_run_prints_its_table_and_figures():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_agent',
       '--suite=minatar', '--modes=reference:1,reference:1:device',
       '--num_frames=64', '--repeats=2', '--timing_repeats=1',
       '--bench_replay_capacity=500', '--min_replay=100'],
      cwd=REPO, capture_output=True, text=True, timeout=120,
      check=True).stdout
  figures = {f['key']: f['value'] for f in harness.read_figures(out)}
  key = 'training.bench_agent.{}:reference_K=1{}'.format
  for suffix in ('', '_device_replay'):
    cells = [figures.get(key(q, suffix), '-')
             for q, _ in bench_agent.COLUMNS.values()]
    cells[3] += '%'  # The update share, as the table prints it.
    assert f'| {" | ".join(cells)} |' in out
  # The device replay samples no host batch: no figure rather than '-'.
  assert key('sample_ms', '_device_replay') not in figures
  assert f"speed-up: {figures['training.bench_agent.speedup']}" in out
