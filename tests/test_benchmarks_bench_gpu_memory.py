"""Tests for scripts.benchmarks.bench_gpu_memory: its figures; a CPU refused."""

import pytest

from scripts.benchmarks import bench_gpu_memory
from scripts.benchmarks import gpu_runs


def _outcome(returncode=0, peak=1_250_000_000, limit=60_000_000_000):
  stats = {'peak_bytes_in_use': peak, 'bytes_limit': limit}
  return gpu_runs.Outcome(returncode, '', stats, 8000.0)


def test_figures_of_both_settings():
  rows = bench_gpu_memory.figures(
      {'preallocated': _outcome(), 'on_demand': _outcome(limit=None)},
      {'preallocated': 61_000.0, 'on_demand': None})
  by_key = {r['key']: r for r in rows}
  assert by_key['gpu.memory.preallocated.peak_in_use']['value'] == '1.25'
  assert by_key['gpu.memory.preallocated.limit']['value'] == '60.00'
  assert by_key['gpu.memory.preallocated.nvidia_smi']['value'] == '63.96'
  assert 'PREALLOCATE=false' in by_key['gpu.memory.on_demand.peak_in_use'][
      'what']
  # Not read: no figure rather than a made-up one.
  assert 'gpu.memory.on_demand.nvidia_smi' not in by_key
  assert 'gpu.memory.on_demand.limit' not in by_key
  assert all(r['unit'] == 'GB' for r in rows)


def test_a_failed_run_gives_no_figures():
  rows = bench_gpu_memory.figures({'preallocated': _outcome(returncode=1)},
                                  {'preallocated': 1000.0})
  assert rows == []


def test_a_cpu_is_refused_with_one_error_line():
  with pytest.raises(SystemExit) as stop:
    bench_gpu_memory.main(['bench_gpu_memory'])
  assert str(stop.value).startswith('Error: this benchmark measures a GPU')
