"""Smoke test of the environment benchmark on a real ROM."""

import os
import re
import subprocess
import sys

from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_prints_frames_per_second_for_both_modes():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_env',
       '--environment_name=pong', '--num_frames=800', '--repeats=2',
       '--num_envs=1,2'],
      cwd=REPO, capture_output=True, text=True, timeout=300,
      check=True).stdout
  assert out.count('round ') == 2
  figures = {f['key']: f for f in harness.read_figures(out)}
  rates = {key.split(':', 1)[1]: f['value'] for key, f in figures.items()
           if key.startswith('atari.bench_env.frames_per_s:')}
  assert set(rates) == {'reference:1', 'vector:1', 'vector:2'}, out
  assert all(int(rate) > 0 for rate in rates.values())
  # The figures are the table's medians and ratios.
  for mode_k, rate in rates.items():
    mode, k = mode_k.split(':')
    ratio = figures[f'atari.bench_env.vs_reference_1:{mode_k}']['value']
    assert re.search(rf'^\| {mode} \| {k} \| {rate} \| .* \| {ratio} \|$',
                     out, re.MULTILINE), out
  assert figures['atari.bench_env.vs_reference_1:reference:1'][
      'value'] == '1.00'
