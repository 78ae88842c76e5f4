"""Tests for scripts.experiments.evidence_estimate: speeds, durations, side by side."""

import pytest

from scripts.experiments import evidence_estimate as est


def test_defaults_are_conservative_without_measurements():
  s = est.Speeds('gpu')
  assert s.per_seed_rate(10) == 1000.0
  assert s.per_seed_rate(64) == pytest.approx(16000 / 64)
  # 500k steps of 10 seeds at the defaults do not fit in 8 minutes.
  assert s.minatar_seconds(10, 5, 100_000, 25_000) > 480
  assert s.side_by_side(10, 4) == 1   # Nothing measured: one at a time.


def test_bench_rates_interpolate_in_log_seeds_and_share_beyond():
  s = est.Speeds('gpu', bench_rates={1: 4000.0, 16: 1000.0})
  assert s.per_seed_rate(1) == 4000.0
  assert s.per_seed_rate(4) == pytest.approx(2000.0)
  assert s.per_seed_rate(32) == pytest.approx(500.0)   # 16,000 in total.
  assert s.per_seed_rate(8, concurrency=2) == pytest.approx(
      1000.0 * est.SHARED_EFFICIENCY)


def test_runs_of_the_plan_override_the_benchmark():
  s = est.Speeds('gpu', bench_rates={16: 1000.0},
                 run_rates={(1, 10): [3000.0, 2500.0]})
  assert s.per_seed_rate(10) == 2500.0
  # 20 seeds in flight: the benchmark's total at 16, shared.
  assert s.per_seed_rate(10, concurrency=2) == pytest.approx(
      800.0 * est.SHARED_EFFICIENCY)


def test_duration_is_padded():
  s = est.Speeds('gpu', bench_rates={10: 1000.0}, compile_s=[40.0],
                 eval_ratios=[2.0])
  work = 40 + 2 * 1000 / 1000 + 3 * 500 / 2000
  assert s.minatar_seconds(10, 2, 1000, 500) == pytest.approx(
      est.STARTUP_S + est.MARGIN * work)


def test_side_by_side_only_where_more_seeds_raise_the_total():
  flat = est.Speeds('gpu', bench_rates={1: 3000.0, 16: 3000.0, 64: 2900.0,
                                        256: 1000.0})
  assert flat.side_by_side(10, 4) == 4
  assert flat.side_by_side(10, 1) == 1
  saturated = est.Speeds('cpu', bench_rates={1: 250.0, 16: 14.0})
  assert saturated.side_by_side(10, 4) == 1
  # A run's rate is never weighed against a benchmark's.
  mixed = est.Speeds('gpu', bench_rates={1: 3000.0, 64: 3000.0},
                     run_rates={(1, 10): [100.0]})
  assert mixed.side_by_side(10, 2) == 2
  measured = est.Speeds('gpu', bench_rates={1: 3000.0, 64: 3000.0},
                        run_rates={(1, 10): [3000.0], (2, 10): [1000.0]})
  assert measured.side_by_side(10, 2) == 1


def test_atari_iterations_that_fit():
  s = est.Speeds('gpu', atari_fps={'vector:64': 10000.0},
                 atari_eval_fps=[50000.0], atari_compile_s=[20.0])
  one = s.atari_seconds('vector:64', 1, 1_000_000, 500_000)
  assert one == pytest.approx(est.STARTUP_S + est.JUDGE_S +
                              est.MARGIN * (20 + 100 + 20))
  assert s.atari_iterations('vector:64', one, 1_000_000, 500_000, 200) == 1
  assert s.atari_iterations('vector:64', one - 1, 1_000_000, 500_000, 200) == 0
  assert s.atari_iterations('vector:64', 1e6, 1_000_000, 500_000, 3) == 3


def _session(kind='H100', scale='full'):
  return {
      'machine': {'device_kind': kind}, 'scale': scale,
      'benchmarks': [
          {'name': 'jitted_minatar', 'status': 'ok', 'seconds': 100.0,
           'figures': {'steps_per_s_per_seed': {'1': 5000.0, '16': 4000.0},
                       'warmup_s': {'1': 30.0}}},
          {'name': 'agent', 'status': 'ok', 'seconds': 80.0,
           'figures': {'frames_per_s': {'vector:64': 9000.0},
                       'best_mode': 'vector:64'}},
          {'name': 'losses', 'status': 'failed', 'seconds': 5.0},
          {'name': 'other', 'status': 'killed', 'seconds': 60.0}],
      'pieces': [{'runs': [
          {'suite': 'minatar', 'status': 'complete', 'seeds': list(range(10)),
           'concurrency': 2, 'train_rate': 3500.0, 'eval_rate': 7000.0,
           'compile_s': 50.0},
          {'suite': 'minatar', 'status': 'killed', 'seeds': [1],
           'train_rate': 1.0},
          {'suite': 'atari', 'status': 'complete', 'mode': 'vector:64',
           'train_rate': 8000.0, 'eval_rate': 20000.0, 'compile_s': 30.0}]}]}


def test_speeds_from_the_sessions_of_the_same_device_kind_and_scale():
  sessions = [_session(), _session('H200'), _session(scale='rehearsal')]
  s = est.speeds(sessions, 'H100', 'gpu', 'full')
  assert s.bench_rates == {1: 5000.0, 16: 4000.0}
  assert s.run_rates == {(2, 10): [3500.0]}
  assert s.eval_ratio() == 2.0 and s.minatar_compile_s() == 50.0
  assert s.best_mode == 'vector:64'
  assert s.atari_train_fps('vector:64') == 8000.0
  assert s.atari_eval() == 20000.0
  assert s.benchmark_estimate('agent', 999) == est.MARGIN * 80.0
  assert s.benchmark_estimate('losses', 45) == 45
  assert s.benchmark_estimate('other', 45) == est.MARGIN * 120.0
  assert est.speeds(sessions, 'A100', 'gpu', 'full').bench_rates == {}
