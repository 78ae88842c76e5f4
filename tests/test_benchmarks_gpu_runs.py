"""Tests for scripts.benchmarks.gpu_runs: the child run harness, on the CPU."""

import threading

import pytest

from scripts.benchmarks import gpu_runs


def test_the_child_runs_the_module_then_reports_the_devices_memory(tmp_path):
  # A module without a main stands for the run: the report comes at exit.
  started = gpu_runs.launch(str(tmp_path), 'alone', {'X': '1'},
                            (100, 10, 20), module='scripts.benchmarks.harness')
  process, log, csv_path = started
  assert csv_path == str(tmp_path / 'alone' / 'results.csv')
  outcome = gpu_runs.finish(*started)
  assert outcome.returncode == 0, outcome.output
  assert '--replay_capacity=20' in process.args[-1]
  # A CPU has no memory statistics: reported empty, not missing.
  assert outcome.stats == {} and outcome.train_rate is None
  assert log == str(tmp_path / 'alone.log')


def test_parse_stats_takes_the_last_report():
  text = ('memory_stats: {"peak_bytes_in_use": 1}\nnoise\n'
          'memory_stats: {"peak_bytes_in_use": 2}\n')
  assert gpu_runs.parse_stats(text) == {'peak_bytes_in_use': 2}
  assert gpu_runs.parse_stats('nothing') is None


def test_train_rate_reads_the_last_iteration(tmp_path):
  path = tmp_path / 'results.csv'
  path.write_text('iteration,train_frame_rate\n0,nan\n1,8123.5\n')
  assert gpu_runs.train_rate(str(path)) == 8123.5
  path.write_text('iteration\n')
  assert gpu_runs.train_rate(str(path)) is None


def test_the_sampler_keeps_the_peak_and_none_without_readings():
  values = iter([100.0, 300.0, None, 200.0])
  seen = threading.Event()

  def read():
    value = next(values, None)
    if value is None:
      seen.set()
    return value
  with gpu_runs.PeakSampler(read, interval_s=0.001) as sampler:
    seen.wait(5)
  assert sampler.peak == 300.0
  with gpu_runs.PeakSampler(lambda: None, interval_s=0.001) as sampler:
    pass
  assert sampler.peak is None


def test_the_visible_gpu_and_the_run_flags():
  assert gpu_runs.visible_gpu({'CUDA_VISIBLE_DEVICES': '3,1'}) == '3'
  assert gpu_runs.visible_gpu({}) == '0'
  argv = gpu_runs.run_argv('/r/results.csv', 100_000, 4096, 20_000)
  assert '--num_envs=64' in argv and '--environment_name=pong' in argv
  # The replay fills within the run: 100,000 frames are 25,000 transitions.
  assert 100_000 // 4 > 20_000


def test_a_cpu_is_refused():
  with pytest.raises(ValueError, match='measures a GPU.*device here is cpu'):
    gpu_runs.require_gpu()
