"""Smoke test of the losses benchmark: it runs and prints measured numbers."""

import os
import re
import subprocess
import sys

from scripts.benchmarks import timing

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_prints_a_row_per_variant_with_positive_times():
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_losses', '--sizes=8,40',
       '--repeats=2', '--nosorts'], cwd=REPO, capture_output=True, text=True,
      timeout=300, check=True).stdout
  for size in (8, 40):
    assert f'N = M = {size}' in out
  for variant in ('cramer_loss', 'cramer_loss_pairwise', 'qr_loss',
                  'rlax_qr_loss', 'cramer_sort_autodiff', 'multiquadric_h0.1',
                  'noisy_target_h0.1'):
    times = re.findall(rf'^{variant}\s+([0-9.]+)\s', out, re.MULTILINE)
    assert len(times) == 2, (variant, out)
    assert all(float(t) > 0 for t in times)
  figures = {f['key']: f for f in timing.read_figures(out)}
  for size in (8, 40):
    rows = re.findall(r'^(\S+)\s+([0-9.]+)\s+([0-9.]+)\s',
                      out.split(f'N = M = {size}\n')[1].split('\n\n')[0],
                      re.MULTILINE)
    assert {'cramer_loss', 'qr_loss', 'rlax_qr_loss'} <= {
        variant for variant, _, _ in rows}
    for variant, ms, ratio in rows:  # The figures are the printed rows.
      assert figures[f'losses.bench_losses.ms:{variant}:{size}'][
          'value'] == ms
      assert figures[f'losses.bench_losses.vs_rlax:{variant}:{size}'][
          'value'] == ratio
  assert figures['losses.bench_losses.vs_rlax:rlax_qr_loss:8'][
      'value'] == '1.000'
