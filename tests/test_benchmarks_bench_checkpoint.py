"""Smoke test of the checkpoint benchmark: both formats timed and sized."""

import os
import subprocess
import sys

from scripts.benchmarks import harness

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_each_format_writes_what_it_must(tmp_path):
  # 20,000 steps of 7,072 B: 0.14 GB per whole-replay checkpoint, 0.035 GB
  # per chunk of 5,000 steps; plus the 1 MB state each.
  out = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_checkpoint',
       '--replay_capacity=20000', '--steps_per_iteration=5000',
       '--state_mb=1', '--repeats=1', f'--output_dir={tmp_path}/bench'],
      cwd=REPO, capture_output=True, text=True, timeout=120, check=True).stdout
  assert '| whole replay | ' in out and '| 0.14 | 0.14 | 0.28 |' in out
  # Chunks: the previous checkpoint is kept (one more chunk after a save),
  # and the older one goes before writing, so the most stays 0.18 GB.
  assert '| chunks | ' in out and '| 0.04 | 0.18 | 0.18 |' in out
  assert 'faster per iteration' in out
  figures = {f['key']: f['value'] for f in harness.read_figures(out)}
  key = 'checkpoint.bench_checkpoint.{}:{}'.format
  assert [figures[key(q, 'whole_replay')] for q in (
      'written', 'disk_after', 'disk_at_most')] == ['0.14', '0.14', '0.28']
  assert [figures[key(q, 'chunks')] for q in (
      'written', 'disk_after', 'disk_at_most')] == ['0.04', '0.18', '0.18']
  for name in ('whole replay', 'chunks'):  # As the table shows them.
    seconds = figures[key('seconds', name.replace(' ', '_'))]
    assert f'| {name} | {seconds} |' in out
  assert (f"chunks are {figures['checkpoint.bench_checkpoint.chunks_speedup']}"
          'x faster') in out
  assert not os.path.exists(tmp_path / 'bench')  # Cleaned up.
