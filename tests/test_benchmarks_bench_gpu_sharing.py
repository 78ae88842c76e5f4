"""Tests for scripts.benchmarks.bench_gpu_sharing: the campaign's settings, the
figures; a CPU refused."""

import pytest

from scripts.benchmarks import bench_gpu_sharing
from scripts.benchmarks import gpu_runs
from scripts.campaign import launch


def _outcome(rate, returncode=0, peak=2_000_000_000):
  return gpu_runs.Outcome(returncode, '', {'peak_bytes_in_use': peak}, rate)


def test_two_runs_get_the_campaigns_setting_for_one_gpu():
  envs = bench_gpu_sharing.shared_environments('1', environ={})
  assert envs == [{'CUDA_VISIBLE_DEVICES': '1',
                   'XLA_PYTHON_CLIENT_MEM_FRACTION': '0.45'}] * 2
  assert envs == launch.local_slots(2, ['1'], {})


def test_figures_compare_the_pair_with_the_run_alone():
  envs = bench_gpu_sharing.shared_environments('0', environ={})
  rows = bench_gpu_sharing.figures(
      _outcome(8000.0), [_outcome(5000.0), _outcome(4600.0)], envs)
  by_key = {r['key']: r for r in rows}
  assert by_key['gpu.sharing.both_finished']['value'] == 'yes'
  assert 'XLA_PYTHON_CLIENT_MEM_FRACTION=0.45' in by_key[
      'gpu.sharing.both_finished']['what']
  assert by_key['gpu.sharing.alone']['value'] == '8,000'
  assert by_key['gpu.sharing.each']['value'] == '5,000 / 4,600'
  assert by_key['gpu.sharing.total']['value'] == '9,600'
  assert by_key['gpu.sharing.gain']['value'] == '1.20'
  assert by_key['gpu.sharing.peak_in_use']['value'] == '2.00 / 2.00'


def test_a_pair_that_does_not_fit_says_so():
  envs = bench_gpu_sharing.shared_environments('0', environ={})
  rows = bench_gpu_sharing.figures(
      _outcome(8000.0), [_outcome(5000.0), _outcome(None, returncode=1)], envs)
  assert [r['key'] for r in rows] == ['gpu.sharing.both_finished',
                                      'gpu.sharing.alone']
  assert rows[0]['value'] == 'no'


def test_a_cpu_is_refused_with_one_error_line():
  with pytest.raises(SystemExit) as stop:
    bench_gpu_sharing.main(['bench_gpu_sharing'])
  assert str(stop.value).startswith('Error: this benchmark measures a GPU')
