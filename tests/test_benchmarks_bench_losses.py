"""Smoke test of the losses benchmark: it runs and prints measured numbers."""

import os
import re
import subprocess
import sys

from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_prints_a_row_per_variant_with_positive_times():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_losses', '--sizes=8,40',
       '--repeats=2', '--nosorts'], cwd=REPO, capture_output=True, text=True,
      timeout=300, check=True).stdout
  rows = re.findall(r'^\| (\S+) \| (\d+) \| ([0-9.]+) \| ([0-9.]+) \|', out,
                    re.MULTILINE)
  for variant in ('cramer_loss', 'cramer_loss_pairwise', 'qr_loss',
                  'rlax_qr_loss', 'cramer_sort_autodiff', 'multiquadric_h0.1',
                  'noisy_target_h0.1'):
    assert {n for v, n, _, _ in rows if v == variant} == {'8', '40'}, out
  figures = {f['key']: f['value'] for f in harness.read_figures(out)}
  for variant, n, ms, ratio in rows:  # The figures are the printed rows.
    assert float(ms) > 0
    assert figures[f'losses.bench_losses.ms:{variant}:{n}'] == ms
    assert figures[f'losses.bench_losses.vs_rlax:{variant}:{n}'] == ratio
  assert figures['losses.bench_losses.vs_rlax:rlax_qr_loss:8'] == '1.000'
