"""Tests for scripts.experiments.evidence: the command's logic on a fake clock with
fake processes, then one real tiny piece end to end on the CPU."""

import datetime
import json
import os
import subprocess
import sys
import tarfile

import pytest

from scripts.experiments import evidence
from scripts.experiments import evidence_bench
from scripts.experiments import evidence_plan
from scripts.experiments import evidence_report
from scripts.experiments import evidence_store
from tests import test_experiments_evidence_schedule

GPU = {'device_kind': 'NVIDIA H100 80GB HBM3', 'platform': 'gpu',
       'device_count': 1, 'jax': '0.11.2', 'python': '3.12.3',
       'cpu_count': 16, 'hostname': 'gpu-box'}
JITTED = """CR-DQN jitted x1: warmed up (compiled, replay past its minimum) in 30 s
CR-DQN jitted x16: warmed up (compiled, replay past its minimum) in 40 s
W1126 dispatch.py:204] Finished XLA compilation of jit(train_chunk) in 12.5 sec
W1126 pxla.py:1] Compiling jit(train_chunk) with global shapes and types (...)
| configuration | loop | seeds | train steps/s per seed | train steps/s total | vs python | memory per seed |
|---|---|---:|---:|---:|---:|---|
| CR-DQN | python | 1 | 900 | 900 | 1.00x | replay |
| CR-DQN | jitted | 1 | 5000 | 5000 | 5.56x | replay |
| CR-DQN | jitted | 16 | 5000 | 80000 | 88.9x | replay |
| CR-DQN | jitted | 64 | 5000 | 320000 | 355x | replay |
| CR-DQN | jitted | 256 | 2000 | 512000 | 568x | replay |
"""
GPU_MEMORY = """| JAX memory setting | peak bytes in use (JAX) |
figures: [{"key": "gpu.memory.on_demand.peak_in_use", "what": "one run, XLA_PYTHON_CLIENT_PREALLOCATE=false: JAX's peak bytes in use", "value": "1.25", "unit": "GB"}]
"""
GPU_SHARING = """figures: [{"key": "gpu.sharing.both_finished", "what": "two runs on one GPU: both finished", "value": "yes", "unit": ""}]
"""
AGENT = """| mode | frames/s | updates/s |
|---|---|---|
| reference K=1 | 1686 | 105 |
| vector K=64 | 9000 | 560 |
| vector K=64 U=4 | 9500 | 590 |
| vector K=64 U=8 | 9900 | 600 |
| vector K=64 U=8 device replay | 12000 | 750 |
| vector K=128 U=8 device replay | 11000 | 700 |
best mode: vector K=64 U=8 device replay
"""


FULL_BENCHMARKS = evidence_bench.benchmarks


@pytest.fixture(autouse=True)
def without_gpu_benchmarks(monkeypatch, request):
  """The tests of the plan's timing keep to the three speed benchmarks; those
  that ask for the fixture all_benchmarks see the whole list."""
  if 'all_benchmarks' not in request.fixturenames:
    monkeypatch.setattr(
        evidence_bench, 'benchmarks',
        lambda scale: [b for b in FULL_BENCHMARKS(scale) if not b.gpu_only])


@pytest.fixture
def all_benchmarks():
  return FULL_BENCHMARKS('full')


def FakeClock():  # pylint: disable=invalid-name
  return test_experiments_evidence_schedule.FakeClock(1000.0)


def _flag(argv, name):
  key = f'--{name}='
  return next(a[len(key):] for a in argv if a.startswith(key))


class FakeProcess:
  """Ends after `seconds` of the fake clock, then writes what the real
  command would: a benchmark's output, or a run's CSVs."""

  def __init__(self, clock, task, seconds):
    self.clock, self.task = clock, task
    self.end = clock.t + seconds
    self.stopped = False

  def poll(self):
    if self.clock.t < self.end:
      return None
    module = self.task.argv[2]
    os.makedirs(os.path.dirname(self.task.log_path), exist_ok=True)
    with open(self.task.log_path, 'w') as f:
      f.write({'scripts.benchmarks.bench_jitted_minatar': JITTED,
               'scripts.benchmarks.bench_agent': AGENT,
               'scripts.benchmarks.bench_gpu_memory': GPU_MEMORY,
               'scripts.benchmarks.bench_gpu_sharing': GPU_SHARING,
               }.get(module, 'ok\n'))
    if module.endswith(('run_minatar', 'run_atari')):
      argv = self.task.argv
      seeds = (_flag(argv, 'seeds').split(',') if 'run_minatar' in module
               else [_flag(argv, 'seed')])
      for seed in seeds:
        path = _flag(argv, 'results_csv_path').format(
            agent=module.split('.')[0], environment_name=_flag(
                argv, 'environment_name'), seed=seed)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, 'w') as f:
          f.write('iteration,eval_episode_return,train_frame_rate,'
                  'eval_frame_rate\n')
          for i in range(int(_flag(argv, 'num_iterations')) + 1):
            f.write(f'{i},{i + int(seed)},4500,9000\n')
    return 0

  def stop(self):
    self.stopped = True


class Starter:
  def __init__(self, clock, durations):
    self.clock, self.durations, self.started = clock, durations, []

  def __call__(self, task):
    module = task.argv[2]
    seconds = next(v for k, v in self.durations.items() if k in module)
    if 'run_atari' in module:
      seconds *= int(_flag(task.argv, 'num_iterations'))
    process = FakeProcess(self.clock, task, seconds)
    self.started.append((self.clock.t, module, task, process))
    return process


DURATIONS = {'bench_': 50, 'run_minatar': 100, 'run_atari': 150,
             'compare_published': 5}


def _opts(tmp_path, **kwargs):
  base = dict(budget_s=480, output_dir=str(tmp_path / 'out'),
              evidence_dir=str(tmp_path / 'evidence'),
              work_dir=str(tmp_path / 'work'), python='python3')
  base.update(kwargs)
  return evidence.Options(**base)


def _session(tmp_path, clock, starter, minute, **kwargs):
  now = datetime.datetime(2026, 11, 27, 10, minute, tzinfo=datetime.timezone.utc)
  lines = []
  path = evidence.run_session(_opts(tmp_path, **kwargs), clock, starter, GPU,
                              now, say=lines.append)
  return path, lines


def _record(archive):
  with tarfile.open(archive) as tar:
    member = next(m for m in tar.getmembers()
                  if m.name.endswith('session.json'))
    return json.load(tar.extractfile(member))


def test_a_first_run_measures_then_runs_what_fits(tmp_path):
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  archive, lines = _session(tmp_path, clock, starter, 0)
  record = _record(archive)
  assert [b['name'] for b in record['benchmarks']] == [
      'jitted_minatar', 'agent', 'losses']
  assert record['benchmarks'][1]['figures']['best_mode'] == (
      'vector:64:u8:device')
  assert record['benchmarks'][0]['compile_s'] == 12.5
  # Flat rates up to 64 seeds: four runs of ten seeds side by side, i.e.
  # the first two pieces at once; nothing else fits in what is left.
  pieces = {p['id']: p for p in record['pieces']}
  assert list(pieces) == ['minatar-cr-vs-qr1-asterix',
                          'minatar-cr-vs-qr1-breakout']
  for piece in pieces.values():
    assert piece['status'] == 'complete'
    assert [r['concurrency'] for r in piece['runs']] == [4, 4]
    assert all(len(r['csvs']) == 10 for r in piece['runs'])
  starts = [t for t, module, _, _ in starter.started if 'run_' in module]
  assert len(set(starts)) == 1
  # Every task ended before the deadline; nothing was stopped.
  assert clock.t - 1000 <= 480 - 20
  assert not any(p.stopped for *_, p in starter.started)
  assert 'atari-cr-dqn-breakout' in record['skipped']
  assert any('compiled 1 programs in 12.5 s' in l for l in lines)
  env = starter.started[-1][2].env
  assert env['XLA_PYTHON_CLIENT_MEM_FRACTION'] == '0.23'
  assert env['JAX_LOG_COMPILES'] == '1'
  assert env['JAX_COMPILATION_CACHE_DIR'] == str(tmp_path / 'work' /
                                                 'jax-cache')
  assert env['JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS'] == '0'
  with tarfile.open(archive) as tar:
    names = tar.getnames()
  assert any(n.endswith('benchmarks.md') for n in names)
  assert any(n.endswith('log.txt') for n in names)
  # The shape-only compile lines are dropped from the logs kept.
  with tarfile.open(archive) as tar:
    text = tar.extractfile(next(m for m in tar.getmembers() if m.name.endswith(
        'benchmarks/jitted_minatar.txt'))).read().decode()
  assert 'global shapes' not in text and 'Finished XLA' in text


def test_the_next_run_skips_the_benchmarks_and_what_is_done(
    tmp_path):
  clock = FakeClock()
  archive, _ = _session(tmp_path, clock, Starter(clock, DURATIONS), 0)
  evidence_store.ingest(archive, str(tmp_path / 'evidence'))
  starter = Starter(clock, DURATIONS)
  archive, lines = _session(tmp_path, clock, starter, 15)
  record = _record(archive)
  assert record['benchmarks'] == []
  assert any('measured in' in l for l in lines)
  # Without the benchmarks more fits: the rest of piece 1's games, then,
  # the Atari piece not fitting, the next MinAtar piece.
  assert [p['id'] for p in record['pieces']] == [
      'minatar-cr-vs-qr1-freeway', 'minatar-cr-vs-qr1-seaquest',
      'minatar-cr-vs-qr1-space_invaders', 'minatar-others-asterix']
  assert record['skipped'][0] == 'atari-cr-dqn-breakout'


def test_without_measurements_nothing_that_may_not_finish_starts(tmp_path):
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  archive, _ = _session(tmp_path, clock, starter, 0, measure='never')
  record = _record(archive)
  assert starter.started == [] and record['pieces'] == []
  assert record['skipped'][:2] == ['minatar-cr-vs-qr1-asterix',
                                   'minatar-cr-vs-qr1-breakout']
  assert record['status'] == 'done'


def test_the_deadline_stops_a_slow_run_and_still_packs(tmp_path):
  clock = FakeClock()
  starter = Starter(clock, dict(DURATIONS, run_minatar=10_000))
  archive, _ = _session(tmp_path, clock, starter, 0)
  record = _record(archive)
  assert clock.t - 1000 == pytest.approx(460, abs=2)
  assert all(p.stopped for t, m, _, p in starter.started if 'run_' in m)
  assert {p['status'] for p in record['pieces']} == {'incomplete'}
  assert {r['status'] for p in record['pieces'] for r in p['runs']} == {
      'killed'}
  assert evidence_store.done_pieces([dict(record, dir='x')]) == {}


def test_an_interrupt_packs_what_finished(tmp_path):
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  ticks = []

  def sleep(seconds):
    ticks.append(seconds)
    if len(ticks) > 200:   # In the runs, after the benchmarks.
      raise KeyboardInterrupt
    clock.t += seconds
  clock.sleep = sleep
  with pytest.raises(KeyboardInterrupt):
    _session(tmp_path, clock, starter, 0)
  (archive,) = os.listdir(tmp_path / 'out')
  record = _record(str(tmp_path / 'out' / archive))
  assert record['status'] == 'interrupted'
  assert len(record['benchmarks']) == 3


def test_an_atari_piece_takes_the_iterations_that_fit_and_is_judged(
    tmp_path):
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  archive, _ = _session(tmp_path, clock, starter, 0, budget_s=900,
                        only=('atari-cr-dqn-breakout',))
  record = _record(archive)
  (piece,) = record['pieces']
  (run,) = piece['runs']
  assert piece['status'] == 'complete' and run['mode'] == 'vector:64:u8:device'
  assert run['iterations'] >= 1 and run['judge'] == (
      'judge/atari-cr-dqn-breakout.txt')
  argv = next(t.argv for _, m, t, _ in starter.started if 'run_atari' in m)
  assert '--replay_on_device' in argv and '--num_fused_updates=8' in argv
  judged = next(t.argv for _, m, t, _ in starter.started
                if 'compare_published' in m)
  assert judged[3].startswith('--runs=CR-DQN=')


def test_a_piece_whose_second_wave_never_started_is_not_complete(tmp_path):
  # Earlier runs on this device: fast, one at a time (no benchmark).
  evidence_store.write_session(
      str(tmp_path / 'evidence' / 'sessions' / 'earlier'),
      {'id': 'earlier', 'scale': 'full', 'machine': GPU, 'pieces': [
          {'id': 'other', 'status': 'complete', 'runs': [
              {'suite': 'minatar', 'status': 'complete', 'concurrency': 1,
               'seeds': list(range(10)), 'train_rate': 1e5,
               'eval_rate': 1e5, 'compile_s': 10.0}]}]})
  clock = FakeClock()
  # The first run ends on the deadline (460 s): the second cannot start.
  starter = Starter(clock, dict(DURATIONS, run_minatar=460))
  archive, _ = _session(tmp_path, clock, starter, 0, measure='never')
  (piece,) = _record(archive)['pieces']
  assert [r['status'] for r in piece['runs']] == ['complete']
  assert piece['status'] == 'incomplete'


def test_a_hanging_benchmark_is_stopped_at_twice_its_estimate(tmp_path):
  clock = FakeClock()
  starter = Starter(clock, dict(bench_jitted=10_000, **DURATIONS))
  archive, _ = _session(tmp_path, clock, starter, 0, budget_s=1200)
  record = _record(archive)
  jitted, agent, losses = record['benchmarks']
  assert jitted['status'] == 'killed'
  assert jitted['seconds'] == pytest.approx(2 * 150, abs=2)
  assert agent['status'] == losses['status'] == 'ok'


def _earlier(tmp_path, benchmarks=(), train_rate=None, sid='earlier'):
  """Write an earlier session of this GPU kind: its benchmarks and, with a
  train rate, one finished MinAtar run of 10 seeds at that rate."""
  runs = [] if train_rate is None else [
      {'suite': 'minatar', 'status': 'complete', 'concurrency': 1,
       'seeds': list(range(10)), 'train_rate': train_rate,
       'eval_rate': train_rate, 'compile_s': 10.0}]
  evidence_store.write_session(
      str(tmp_path / 'evidence' / 'sessions' / sid),
      {'id': sid, 'scale': 'full', 'machine': GPU,
       'benchmarks': list(benchmarks),
       'pieces': [{'id': 'other', 'status': 'complete', 'runs': runs}]})


def _code(name):
  bench = next(b for b in FULL_BENCHMARKS('full') if b.name == name)
  return evidence_store.source_hash(evidence.ROOT, bench.sources, bench.argv)


def _bench(name, seconds, code='older'):
  return {'name': name, 'status': 'ok', 'seconds': seconds, 'code': code,
          'figures': {}}


def _benchmark_seconds(record):
  return sum(b['seconds'] for b in record['benchmarks']
             if b['status'] != 'skipped')


def test_the_benchmarks_take_at_most_their_share(tmp_path):
  # Known estimates (1.25 x the earlier seconds: 100, 100, 40), each taking
  # 100 s; no piece fits even then (no measured run, the defaults).
  _earlier(tmp_path, [_bench('jitted_minatar', 80), _bench('agent', 80),
                      _bench('losses', 32)])
  clock = FakeClock()
  starter = Starter(clock, dict(DURATIONS, bench_=100))  # Every benchmark.
  archive, lines = _session(tmp_path, clock, starter, 0)
  record = _record(archive)
  assert _benchmark_seconds(record) <= evidence.MEASURE_SHARE * 480 + 2
  assert [b['status'] for b in record['benchmarks']] == ['ok', 'ok', 'killed']
  assert any('240 s for them' in l for l in lines)


def test_a_piece_that_fits_is_kept_from_the_benchmarks(tmp_path):
  # Measured: MinAtar runs of 10 seeds at 6,132 steps/s per seed, one at a
  # time, i.e. the first piece's two runs in ~330 s; the benchmarks' own
  # estimates 100, 100 and 40 s. Their share (240 s) would leave too little
  # for the piece: they get what the piece leaves (130 s), and it starts.
  _earlier(tmp_path, [_bench('jitted_minatar', 80), _bench('agent', 80),
                      _bench('losses', 32)], train_rate=6132.0)
  clock = FakeClock()
  starter = Starter(clock, dict(bench_jitted=100, bench_agent=100,
                                bench_losses=40, **DURATIONS))
  archive, lines = _session(tmp_path, clock, starter, 0)
  record = _record(archive)
  assert any('minatar-cr-vs-qr1-asterix fits (~330 s)' in l for l in lines)
  assert [b['name'] for b in record['benchmarks']] == ['jitted_minatar']
  assert record['skipped'][:2] == ['benchmark agent', 'benchmark losses']
  assert _benchmark_seconds(record) <= 480 - 20 - 330
  assert record['pieces'][0]['id'] == 'minatar-cr-vs-qr1-asterix'
  assert record['pieces'][0]['status'] == 'complete'


def test_a_figure_of_unchanged_benchmarked_code_is_not_taken_again(tmp_path):
  # losses: measured on this GPU kind by today's benchmarked code; agent: by
  # other code, in the older of two sessions; jitted_minatar: never.
  _earlier(tmp_path, [_bench('agent', 40)], sid='a-older')
  _earlier(tmp_path, [_bench('losses', 40, _code('losses'))], sid='b-newer')
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  archive, lines = _session(tmp_path, clock, starter, 0)
  record = _record(archive)
  assert [b['name'] for b in record['benchmarks']] == ['jitted_minatar',
                                                       'agent']
  assert record['benchmarks'][1]['code'] == _code('agent')
  assert any(f'benchmark losses: its code {_code("losses")} on NVIDIA H100 '
             '80GB HBM3 measured in b-newer' in l for l in lines)
  # The benchmarked code of the losses reaches into zoo/ only for how a
  # tool starts.
  losses = evidence_bench.benchmarks('full')[2]
  assert [f for f in evidence_store.source_files(evidence.ROOT, losses.sources)
          if f.startswith('zoo/')] == ['zoo/__init__.py',
                                       'zoo/configuration/__init__.py',
                                       'zoo/configuration/cli.py']


def test_the_never_measured_go_first_the_newest_added_first(tmp_path,
                                                          monkeypatch):
  full = FULL_BENCHMARKS('full')[:3]
  newer = evidence_bench.Benchmark('newer', ('scripts.benchmarks.bench_env',),
                                   30, added='2026-11-27')
  monkeypatch.setattr(evidence_bench, 'benchmarks',
                      lambda scale: full + [newer])
  _earlier(tmp_path, [_bench('agent', 40)], sid='a-older')
  _earlier(tmp_path, [_bench('jitted_minatar', 40)], sid='b-newer')
  clock = FakeClock()
  archive, _ = _session(tmp_path, clock, Starter(clock, DURATIONS), 0,
                        budget_s=1200)
  # Never measured: newer (added last), losses; then the stale ones, the
  # one measured longest ago first.
  assert [b['name'] for b in _record(archive)['benchmarks']] == [
      'newer', 'losses', 'agent', 'jitted_minatar']


def test_on_a_cpu_the_gpu_only_benchmarks_are_skipped_with_the_reason(
    tmp_path, all_benchmarks):
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  cpu = dict(GPU, device_kind='cpu', platform='cpu')
  now = datetime.datetime(2026, 11, 27, 10, 0, tzinfo=datetime.timezone.utc)
  lines = []
  archive = evidence.run_session(_opts(tmp_path), clock, starter, cpu, now,
                                 say=lines.append)
  record = _record(archive)
  skipped = {b['name']: b for b in record['benchmarks']
             if b['status'] == 'skipped'}
  assert set(skipped) == {'gpu_memory', 'gpu_sharing', 'overlap'}
  assert skipped['gpu_memory']['reason'].startswith('GPU-only')
  assert 'device here is cpu' in skipped['gpu_sharing']['reason']
  assert not any('bench_gpu' in module for _, module, _, _ in starter.started)
  assert any('benchmark gpu_memory: skipped (GPU-only' in l for l in lines)
  assert len(all_benchmarks) == 6


def test_on_a_gpu_the_memory_and_sharing_go_first_and_fill_the_campaign_page(
    tmp_path, all_benchmarks):
  del all_benchmarks
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  # 15 minutes: a share of 450 s, the two GPU measurements' 390 s fit.
  archive, _ = _session(tmp_path, clock, starter, 0, budget_s=900)
  record = _record(archive)
  names = [b['name'] for b in record['benchmarks']]
  assert names[:2] == ['gpu_memory', 'gpu_sharing']
  memory = record['benchmarks'][0]
  assert memory['status'] == 'ok' and memory['figures']['rows'][0]['key'] == (
      'gpu.memory.on_demand.peak_in_use')
  assert sum(b['seconds'] for b in record['benchmarks']) <= 450 + 2
  evidence_store.ingest(archive, str(tmp_path / 'evidence'))
  bodies = evidence_report.sections(str(tmp_path / 'evidence'), [])
  assert ('| one run, XLA_PYTHON_CLIENT_PREALLOCATE=false: JAX\'s peak bytes in '
          'use | 1.25 GB | NVIDIA H100 80GB HBM3 (gpu), 16 CPUs | 2026-11-27 |'
          ) in bodies['gpu-memory']
  assert '| two runs on one GPU: both finished | yes |' in bodies['gpu-sharing']
  # The next run on this GPU kind, same code: not measured again.
  archive, _ = _session(tmp_path, clock, Starter(clock, DURATIONS), 15,
                        budget_s=900)
  assert not {'gpu_memory', 'gpu_sharing'} & {
      b['name'] for b in _record(archive)['benchmarks']}


def test_sigterm_packs_like_ctrl_c():
  with pytest.raises(KeyboardInterrupt):
    evidence._sigterm(15, None)  # pylint: disable=protected-access


def test_dry_run_starts_nothing_and_packs_nothing(tmp_path):
  clock = FakeClock()
  starter = Starter(clock, DURATIONS)
  path, lines = _session(tmp_path, clock, starter, 0, dry_run=True)
  assert path == '' and starter.started == []
  assert not os.path.exists(tmp_path / 'out')
  assert any('minatar-cr-vs-qr1-asterix: pending' in l for l in lines)


@pytest.mark.end_to_end
@pytest.mark.timeout(240)
def test_a_tiny_piece_end_to_end_on_the_cpu(tmp_path):
  """The real command: a rehearsal of the first MinAtar piece (CR-DQN, 2
  seeds, 1,000 steps), packed, ingested, done."""
  out, evidence_dir = tmp_path / 'out', tmp_path / 'evidence'
  command = [sys.executable, '-m', 'scripts.experiments.evidence', '--rehearsal',
             '--measure=never', '--budget_minutes=4',
             '--pieces=minatar-cr-vs-qr1-breakout', f'--output_dir={out}',
             f'--work_dir={tmp_path / "work"}',
             f'--evidence_dir={evidence_dir}']
  result = subprocess.run(command, capture_output=True, text=True,
                          cwd=evidence.ROOT, timeout=230)
  assert result.returncode == 0, result.stdout + result.stderr
  (archive,) = os.listdir(out)
  record = _record(str(out / archive))
  (piece,) = record['pieces']
  assert piece['status'] == 'complete', result.stdout
  assert len(piece['runs'][0]['csvs']) == 2
  assert record['machine']['cpu_count'] == os.cpu_count()
  assert 'compiled' in result.stdout
  evidence_store.ingest(str(out / archive), str(evidence_dir))
  report = evidence_report.render(str(evidence_dir), evidence_plan.pieces())
  assert record['id'] in report and 'rehearsal' in report


def test_report_rewrites_the_readme_from_the_repository_folder_only(tmp_path):
  readme = os.path.join(evidence.ROOT, 'README.md')
  with open(readme) as f:
    before = f.read()
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.evidence', '--report',
       f'--evidence_dir={tmp_path}', f'--report_path={tmp_path / "e.md"}'],
      capture_output=True, text=True, cwd=evidence.ROOT, timeout=120)
  assert result.returncode == 0, result.stdout + result.stderr
  assert 'follow evidence/ only: not rewritten' in result.stdout
  assert 'None yet' in (tmp_path / 'e.md').read_text()
  with open(readme) as f:
    assert f.read() == before
