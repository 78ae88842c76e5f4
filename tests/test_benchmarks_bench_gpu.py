"""Tests for scripts.benchmarks.bench_gpu on the CPU: the child runs, their
readings, the measurements' figures; a CPU refused."""

import os
import subprocess
import sys

from scripts.benchmarks import bench_gpu
from scripts.campaign import check
from scripts.campaign import launch
from scripts.campaign import run_record as run_lib

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _outcome(rate=8000.0, returncode=0, peak=1_250_000_000, limit=None):
  stats = {'peak_bytes_in_use': peak}
  if limit:
    stats['bytes_limit'] = limit
  return bench_gpu.Outcome(returncode, '', stats, rate)


def test_the_child_runs_the_module_then_reports_the_devices_memory(tmp_path):
  # A module without a main stands for the run: the report comes at exit.
  started = bench_gpu.start(str(tmp_path), 'alone', {'X': '1'},
                            (100, 10, 20), module='scripts.benchmarks.harness')
  process, log, csv_path = started
  assert csv_path == str(tmp_path / 'alone' / 'results.csv')
  assert log == str(tmp_path / 'alone.log')
  outcome = bench_gpu.finish(*started)
  assert outcome.returncode == 0, outcome.output
  assert '--replay_capacity=20' in process.args[-1]
  # A CPU has no memory statistics: reported empty, not missing.
  assert outcome.stats == {} and outcome.train_rate is None


def test_the_readings_of_a_run():
  text = ('memory_stats: {"peak_bytes_in_use": 1}\nnoise\n'
          'memory_stats: {"peak_bytes_in_use": 2}\n')
  assert bench_gpu.parse_stats(text) == {'peak_bytes_in_use': 2}
  assert bench_gpu.parse_stats('nothing') is None
  argv = bench_gpu.run_argv('/r/results.csv', 100_000, 4096, 20_000)
  assert '--num_envs=64' in argv and '--environment_name=pong' in argv


def test_train_rate_reads_the_last_iteration(tmp_path):
  path = tmp_path / 'results.csv'
  path.write_text('iteration,train_frame_rate\n0,nan\n1,8123.5\n')
  assert bench_gpu.train_rate(str(path)) == 8123.5
  path.write_text('iteration\n')
  assert bench_gpu.train_rate(str(path)) is None


def test_the_peak_of_the_readings_while_a_process_runs():
  process = subprocess.Popen([sys.executable, '-c', 'import time; '
                              'time.sleep(0.5)'])
  values = iter([100.0, 300.0, None, 200.0])
  assert bench_gpu.peak_while(process, lambda: next(values, None),
                              interval_s=0.01) == 300.0
  assert process.returncode == 0
  assert bench_gpu.peak_while(process, lambda: None) is None


def test_memory_figures_of_both_settings():
  rows = bench_gpu.memory_figures(
      {'preallocated': _outcome(limit=60_000_000_000),
       'on_demand': _outcome()},
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
  assert bench_gpu.memory_figures({'preallocated': _outcome(returncode=1)},
                                  {'preallocated': 1000.0}) == []


def test_sharing_figures_compare_the_pair_with_the_run_alone():
  envs = launch.local_slots(bench_gpu.RUNS_PER_GPU, ['0'], {})
  rows = bench_gpu.sharing_figures(
      _outcome(peak=2e9), [_outcome(5000.0, peak=2e9),
                           _outcome(4600.0, peak=2e9)], envs)
  by_key = {r['key']: r for r in rows}
  assert by_key['gpu.sharing.both_finished']['value'] == 'yes'
  assert 'XLA_PYTHON_CLIENT_MEM_FRACTION=0.45' in by_key[
      'gpu.sharing.both_finished']['what']
  assert by_key['gpu.sharing.alone']['value'] == '8,000'
  assert by_key['gpu.sharing.each']['value'] == '5,000 / 4,600'
  assert by_key['gpu.sharing.total']['value'] == '9,600'
  assert by_key['gpu.sharing.gain']['value'] == '1.20'
  assert by_key['gpu.sharing.peak_in_use']['value'] == '2.00 / 2.00'
  # A pair that does not fit says so.
  rows = bench_gpu.sharing_figures(
      _outcome(), [_outcome(5000.0), _outcome(None, returncode=1)], envs)
  assert [r['key'] for r in rows] == ['gpu.sharing.both_finished',
                                      'gpu.sharing.alone']
  assert rows[0]['value'] == 'no'


def test_a_cpu_is_refused_with_one_error_line():
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.benchmarks.bench_gpu',
       '--measure=memory'], cwd=REPO, capture_output=True, text=True,
      timeout=120)
  assert result.returncode == 1 and result.stderr.splitlines()[-1] == (
      'Error: this benchmark measures a GPU, and JAX\'s device here is cpu. '
      'Run it on a machine with a GPU (and a CUDA build of JAX).')


def test_a_packed_run_is_an_atari100k_run_that_learns_early(tmp_path):
  argv = bench_gpu.packing_argv('/r/results.csv', 20_000)
  assert argv[0] == '--protocol=atari100k'
  assert '--num_train_frames=20000' in argv
  # The flags are the run's own: the campaign's check parses them as it does.
  run = run_lib.Run('cr_dqn', 'atari', 'pong', (1,), tuple(
      a for a in argv if not a.startswith(('--results_csv_path',
                                           '--checkpoint_dir',
                                           '--tensorboard_dir',
                                           '--environment_name'))))
  check.check([run], '/runs')
  # Learning starts at transition 200 of the protocol's 100,000.
  assert run.setting('min_replay_capacity_fraction') * int(
      run.setting('replay_capacity')) == 200
  assert int(run.setting('num_final_eval_episodes')) == 1
  # start() passes a packed run its CSV and training frames.
  started = bench_gpu.start(str(tmp_path), 'packed_2_1', {}, (20_000,),
                            module='scripts.benchmarks.harness',
                            argv=bench_gpu.packing_argv)
  assert bench_gpu.finish(*started).returncode == 0
  assert (f"--results_csv_path={tmp_path / 'packed_2_1' / 'results.csv'}"
          in started[0].args[-1])


def test_packing_figures_find_the_most_runs_per_gpu_that_pay_off():
  envs = {n: launch.local_slots(n, ['0'], {}) for n in (1, 2, 4, 8)}
  levels = {1: [_outcome(400.0)],
            2: [_outcome(390.0), _outcome(380.0)],
            4: [_outcome(300.0)] * 4,
            8: [_outcome(100.0)] * 7 + [_outcome(None, returncode=1)]}
  by_key = {r['key']: r for r in bench_gpu.packing_figures(levels, envs)}
  assert by_key['gpu.packing.total:2']['value'] == '770'
  assert by_key['gpu.packing.each:2']['value'] == '380 / 390'
  assert by_key['gpu.packing.gain:4']['value'] == '3.00'
  assert 'XLA_PYTHON_CLIENT_MEM_FRACTION=0.225 each' in by_key[
      'gpu.packing.total:4']['what']
  # Eight did not all finish: said, and not a candidate.
  assert by_key['gpu.packing.finished:8']['value'] == 'no'
  assert 'gpu.packing.total:8' not in by_key
  assert by_key['gpu.packing.best']['value'] == '4'
  # Without the run alone: totals, no gains.
  del levels[1]
  rows = bench_gpu.packing_figures(levels, envs)
  assert not any(r['key'].startswith('gpu.packing.gain') for r in rows)
  assert {r['key']: r for r in rows}['gpu.packing.best']['value'] == '4'
