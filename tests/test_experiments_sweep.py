"""Tests for scripts.experiments.sweep with a fake run command (and, if present, a real one)."""

import json
import os
import socket
import subprocess
import sys
import textwrap
import time
import types

import pytest

from scripts.experiments import sweep
from zoo.storage import run_directory
from zoo.suites import atari_suite
from zoo.suites import minatar_suite
from tests.test_analysis_run_data import RUN_COLUMNS
from tests.test_cli_errors import assert_clean_error
from tests.test_cli_errors import run_cases

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A stand-in for `python -m <agent>.run_atari`: resumes from its CSV, writes a
# row per iteration atomically, logs start/end times to --trace, and can fail.
# --wait_for_starts=N holds a run until N runs have started (or 60 s passed),
# so that runs launched side by side overlap however slowly a busy machine
# starts them, and runs launched one at a time never do.
FAKE_RUN = textwrap.dedent('''
    import argparse, csv, os, sys, time
    p = argparse.ArgumentParser()
    for name in ('agent', 'environment_name', 'results_csv_path',
                 'checkpoint_dir', 'trace'):
      p.add_argument('--' + name, default='')
    p.add_argument('--seed', type=int)
    p.add_argument('--num_iterations', type=int, default=200)
    p.add_argument('--sleep', type=float, default=0.0)
    p.add_argument('--wait_for_starts', type=int, default=0)
    p.add_argument('--fail_seed', type=int, default=-1)
    a = p.parse_args()
    columns = %r
    rows = []
    if os.path.exists(a.results_csv_path):
      rows = list(csv.DictReader(open(a.results_csv_path)))
    if a.trace:
      with open(a.trace, 'a') as f:
        f.write('start %%f %%d\\n' %% (time.time(), len(rows)))
    deadline = time.time() + 60
    while (a.wait_for_starts and time.time() < deadline and
           open(a.trace).read().count('start') < a.wait_for_starts):
      time.sleep(0.01)
    time.sleep(a.sleep)
    for i in range(len(rows), a.num_iterations + 1):
      if a.seed == a.fail_seed and i == 1:
        sys.exit(3)
      row = dict.fromkeys(columns, 'nan')
      row.update(agent=a.agent, environment_name=a.environment_name,
                 seed=a.seed, iteration=i, frame=i * 400,
                 eval_episode_return=i)
      rows.append(row)
      tmp = a.results_csv_path + '.tmp'
      with open(tmp, 'w', newline='') as f:
        w = csv.DictWriter(f, fieldnames=columns)
        w.writeheader()
        w.writerows(rows)
      os.replace(tmp, a.results_csv_path)
    if a.trace:
      with open(a.trace, 'a') as f:
        f.write('end %%f\\n' %% time.time())
''' % (RUN_COLUMNS,))


@pytest.fixture
def fake_template(tmp_path):
  script = tmp_path / 'fake_run.py'
  script.write_text(FAKE_RUN)
  return (f'{{python}} {script} --agent={{agent}} --environment_name={{game}} '
          '--seed={seed} --results_csv_path={results_csv_path} '
          '--checkpoint_dir={checkpoint_dir}')


def make_specs(root, template, agents=('cr_dqn',), games=('pong',),
               seeds=(1, 2), extra=()):
  return sweep.expand(agents, games, seeds, str(root), list(extra), template)


def max_concurrency(trace_path):
  events = []
  for line in open(trace_path):
    kind, when = line.split()[:2]
    events.append((float(when), 1 if kind == 'start' else -1))
  running = peak = 0
  for _, delta in sorted(events, key=lambda e: (e[0], e[1])):
    running += delta
    peak = max(peak, running)
  return peak


def test_validate_names_up_front():
  assert sweep.validate(['cr_dqn'], ['pong'], ['1', '2']) == (
      ['cr_dqn'], ['pong'], [1, 2])
  assert len(sweep.validate(['qr_dqn'], ['all'], ['1'])[1]) == 57
  with pytest.raises(ValueError, match='Unknown agent'):
    sweep.validate(['dqn'], ['pong'], ['1'])
  with pytest.raises(ValueError, match="Did you mean 'pong'"):
    sweep.validate(['cr_dqn'], ['pongg'], ['1'])
  with pytest.raises(ValueError, match='integers'):
    sweep.validate(['cr_dqn'], ['pong'], ['one'])
  with pytest.raises(ValueError, match='twice'):
    sweep.validate(['cr_dqn'], ['pong'], ['1', '1'])


def test_expand_builds_the_run_atari_command(tmp_path):
  specs = sweep.expand(['cr_dqn', 'qr_dqn'], ['pong'], [1, 2], str(tmp_path),
                       ['--num_iterations=3', '--num_train_frames=400'])
  assert [s.name for s in specs] == [
      'cr_dqn/pong/seed_1', 'cr_dqn/pong/seed_2', 'qr_dqn/pong/seed_1',
      'qr_dqn/pong/seed_2']
  spec = specs[1]
  assert spec.run_dir == str(tmp_path / 'cr_dqn' / 'pong' / 'seed_2')
  assert spec.num_iterations == 3
  assert spec.command == [
      sys.executable, '-m', 'cr_dqn.run_atari', '--environment_name=pong',
      '--seed=2', f'--results_csv_path={spec.run_dir}/results.csv',
      f'--checkpoint_dir={spec.run_dir}/checkpoints', '--num_iterations=3',
      '--num_train_frames=400']
  assert sweep.expand(['cr_dqn'], ['pong'], [1], str(tmp_path))[0] \
      .num_iterations == 200
  with pytest.raises(ValueError, match='unknown field'):
    sweep.expand(['cr_dqn'], ['pong'], [1], str(tmp_path),
                 command_template='{python} {nope}')


def test_minatar_suite_validates_its_games_and_runs_run_minatar(tmp_path):
  assert sweep.validate(['cr_dqn'], ['all'], ['1'], 'minatar')[1] == [
      'asterix', 'breakout', 'freeway', 'seaquest', 'space_invaders']
  with pytest.raises(ValueError, match="Unknown MinAtar game 'pong'"):
    sweep.validate(['cr_dqn'], ['pong'], ['1'], 'minatar')
  with pytest.raises(ValueError, match='Unknown suite'):
    sweep.validate(['cr_dqn'], ['pong'], ['1'], 'procgen')
  template, num_iterations = sweep.suite_defaults('minatar')
  assert num_iterations == 50
  spec, = sweep.expand(['qr_dqn'], ['seaquest'], [3], str(tmp_path), [],
                       template, num_iterations)
  assert spec.command[:4] == [sys.executable, '-m', 'qr_dqn.run_minatar',
                              '--environment_name=seaquest']
  assert spec.num_iterations == 50
  # Atari stays the default.
  assert sweep.suite_defaults('atari') == (sweep.DEFAULT_COMMAND_TEMPLATE, 200)


def test_cli_minatar_dry_run(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.sweep', '--suite=minatar',
       '--agents=nc_cr_dqn', '--games=breakout,freeway', '--seeds=1',
       f'--root_dir={tmp_path}', '--dry_run'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert result.returncode == 0, result.stderr
  commands = [line for line in result.stdout.splitlines() if ' -m ' in line]
  assert len(commands) == 2
  assert all('nc_cr_dqn.run_minatar' in line for line in commands)
  bad = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.sweep', '--suite=minatar',
       '--agents=cr_dqn', '--games=pong', f'--root_dir={tmp_path}'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert bad.returncode != 0 and 'Unknown MinAtar game' in bad.stderr


def test_parse_num_iterations():
  assert sweep.parse_num_iterations(['--num_iterations=7']) == 7
  assert sweep.parse_num_iterations(['--num_iterations', '8']) == 8
  assert sweep.parse_num_iterations(['--seed=1']) is None


def test_run_flags_are_parsed_as_the_run_parses_them():
  parsed = sweep.parse_run_flags(
      minatar_suite.MINATAR, ['--num_train_frames=1e4', '--loop', 'jitted',
                              '-v=1', '--preset=CR-DQN-MQ'])
  assert parsed['num_train_frames'] == 10_000  # A count: 1e4 accepted.
  assert parsed['loop'] == 'jitted' and parsed['preset'] == 'CR-DQN-MQ'
  assert parsed['num_iterations'] == 50  # The suite's default.
  assert sweep.parse_run_flags(atari_suite.ATARI, [])['num_iterations'] == 200
  for extra, message in (
      (['--num_iteration=2'], "Unknown command line flag 'num_iteration'"),
      (['--num_iterations=2e0'], '--num_iterations=2e0'),  # Not a count.
      (['--loop=fast'], '--loop=fast'),
      (['pong'], 'unexpected arguments'),
      (['--seeds=1,2'], 'sets --seeds, which the sweep sets for each run'),
      (['--results_csv_path=x.csv'], 'sets --results_csv_path')):
    with pytest.raises(ValueError, match=message):
      sweep.parse_run_flags(atari_suite.ATARI, extra)


def test_every_runs_settings_are_checked_up_front(tmp_path):
  specs = sweep.expand(['cr_dqn', 'qr_dqn'], ['pong', 'breakout'], [1, 2],
                       str(tmp_path / 'runs'))
  good = sweep.parse_run_flags(atari_suite.ATARI, ['--num_envs=4'])
  sweep.check_runs(specs, atari_suite.ATARI, good)
  for extra, message in (
      (['--batch_size=100000'],
       r'cr_dqn/pong/seed_1: --batch_size=100000 exceeds'),
      (['--preset=CR-DQN-MQ'], "--flags for qr_dqn: Unknown preset 'CR-DQN-MQ'"),
      (['--preset=nope'], "--flags for cr_dqn: Unknown preset 'nope'")):
    with pytest.raises(ValueError, match=message):
      sweep.check_runs(specs, atari_suite.ATARI,
                       sweep.parse_run_flags(atari_suite.ATARI, extra))
  assert not (tmp_path / 'runs').exists()


def test_bad_input_is_one_error_line_and_nothing_starts(tmp_path):
  root = tmp_path / 'runs'
  run = ['--agents=cr_dqn', '--games=pong', f'--root_dir={root}']
  results = run_cases('scripts.experiments.sweep', [
      ['--agents=cr_dqn', '--games=pongg', f'--root_dir={root}'],
      run + ['--seeds=1,2,1'],
      ['--agents=cr_dqn', '--games=pong'],
      ['--games=pong', f'--root_dir={root}'],
      run + ['--flags=--num_iteration=2'],
      run + ['--flags=--batch_size=100000'],
      run + ['--flags=--seed=3'],
      run + ['--parallel=0'],
      run + ['--suite=procgen'],
      run + ['extra'],
  ], tmp_path)
  assert_clean_error(results[0], "Unknown Atari game 'pongg'",
                     "Did you mean 'pong'")
  assert_clean_error(results[1], '--seeds lists a value twice')
  assert_clean_error(results[2], '--root_dir is required')
  assert_clean_error(results[3], '--agents is required')
  assert_clean_error(results[4], "Unknown command line flag 'num_iteration'",
                     'num_iterations', 'run_atari --help')
  assert_clean_error(results[5], 'cr_dqn/pong/seed_1: --batch_size=100000',
                     'raise the replay or lower the batch')
  assert_clean_error(results[6], '--flags sets --seed', '--seeds')
  assert_clean_error(results[7], '--parallel must be >= 1')
  assert_clean_error(results[8], '--suite=procgen', 'atari|minatar',
                     '--help lists the flags')
  assert_clean_error(results[9], "unexpected arguments ['extra']")
  for result in results:
    assert result['returncode'] == 1 and result['stdout'] == ''
  assert not root.exists()  # Nothing started.


def test_help_exits_zero():
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.sweep', '--help'], cwd=REPO,
      capture_output=True, text=True, timeout=60)
  assert result.returncode == 0, result.stderr
  assert '--agents: Agents, from' in result.stdout
  assert '--flags: Extra flags for every run' in result.stdout


def test_local_sweep_runs_in_parallel_then_skips_finished_runs(
    tmp_path, fake_template):
  trace = tmp_path / 'trace.txt'
  specs = make_specs(tmp_path / 'runs', fake_template, agents=('cr_dqn',
                                                               'qr_dqn'),
                     extra=['--num_iterations=2', '--wait_for_starts=2',
                            f'--trace={trace}'])
  results = sweep.run_local(specs, parallel=2)
  assert results == {s.run_dir: 0 for s in specs}
  assert max_concurrency(trace) == 2
  statuses = sweep.sweep_status(str(tmp_path / 'runs'))
  assert [(s.state, s.last_iteration) for s in statuses] == [('done', 2)] * 4
  for spec in specs:
    assert 'fake_run.py' in open(os.path.join(spec.run_dir, 'run.log')).read()
    assert not os.path.exists(os.path.join(spec.run_dir, 'run.lock'))
  # Relaunch: nothing to do, nothing started.
  assert sweep.select_runs(specs) == []
  starts = open(trace).read().count('start')
  assert set(sweep.run_local(specs, parallel=2).values()) == {None}
  assert open(trace).read().count('start') == starts == 4


def test_two_configurations_of_one_agent_are_two_runs(tmp_path, fake_template,
                                                     capsys):
  # As minatar_study's QR-DQN-1 and QR-DQN-0: one agent, two root dirs.
  specs = (make_specs(tmp_path / 'kappa_1', fake_template, seeds=(1,),
                      extra=['--num_iterations=1']) +
           make_specs(tmp_path / 'kappa_0', fake_template, seeds=(1,),
                      extra=['--num_iterations=1']))
  assert specs[0].name == specs[1].name
  results = sweep.run_local(specs, parallel=2)
  assert results == {specs[0].run_dir: 0, specs[1].run_dir: 0}
  counters = [line.split()[0] for line in capsys.readouterr().out.splitlines()
              if line.startswith('[')]
  assert counters == ['[1/2]', '[2/2]']


def test_parallel_one_runs_one_at_a_time(tmp_path, fake_template):
  trace = tmp_path / 'trace.txt'
  specs = make_specs(tmp_path / 'runs', fake_template, seeds=(1, 2, 3),
                     extra=['--num_iterations=1', '--sleep=0.2',
                            f'--trace={trace}'])
  sweep.run_local(specs, parallel=1)
  assert max_concurrency(trace) == 1
  with pytest.raises(ValueError, match='parallel'):
    sweep.run_local(specs, parallel=0)


def test_failure_is_recorded_and_the_retry_resumes(tmp_path, fake_template):
  root = tmp_path / 'runs'
  failing = make_specs(root, fake_template,
                       extra=['--num_iterations=3', '--fail_seed=2'])
  results = sweep.run_local(failing, parallel=2)
  assert results == {failing[0].run_dir: 0, failing[1].run_dir: 3}
  by_seed = {s.seed: s for s in sweep.sweep_status(str(root))}
  assert by_seed[1].state == 'done'
  assert by_seed[2].state == 'failed'
  assert by_seed[2].last_iteration == 0
  assert 'exit 3' in by_seed[2].detail
  table = sweep.format_status(list(by_seed.values()))
  assert '1 done, 0 running, 1 failed, 0 pending (2 runs)' in table
  assert sweep.select_runs(failing, retry_failed=False) == []
  # Retry without the fault: it resumes from the CSV (one start at row 1).
  trace = tmp_path / 'trace.txt'
  fixed = make_specs(root, fake_template,
                     extra=['--num_iterations=3', f'--trace={trace}'])
  assert [s.seed for s in sweep.select_runs(fixed)] == [2]
  assert sweep.run_local(sweep.select_runs(fixed), parallel=1) == {
      fixed[1].run_dir: 0}
  assert open(trace).read().split()[2] == '1'  # resumed with 1 row done
  assert {s.state for s in sweep.sweep_status(str(root))} == {'done'}


def test_running_interrupted_and_stale_runs(tmp_path):
  root = tmp_path / 'runs'
  specs = sweep.expand(['cr_dqn'], ['pong'], [1, 2, 3, 4], str(root),
                       ['--num_iterations=5'])
  for spec in specs:
    os.makedirs(spec.run_dir)
  host = socket.gethostname()
  # seed 1: a live process holds the lock.
  held = run_directory.lock(specs[0].run_dir)
  # seed 2: interrupted after 2 iterations, no lock, no exit record.
  with open(specs[1].results_csv_path, 'w') as f:
    f.write('iteration\n0\n1\n2\n')
  # seed 3: a stale lock left by a dead process.
  dead = subprocess.Popen([sys.executable, '-c', 'pass'])
  dead.wait()
  with open(os.path.join(specs[2].run_dir, 'run.lock'), 'w') as f:
    json.dump({'pid': dead.pid, 'host': host, 'since': 0}, f)
  statuses = sweep.sweep_status(str(root), specs)
  assert [(s.seed, s.state, s.last_iteration) for s in statuses] == [
      (1, 'running', -1), (2, 'pending', 2), (3, 'pending', -1),
      (4, 'pending', -1)]
  assert statuses[1].detail == 'interrupted'
  assert 'stale' in statuses[2].detail
  assert [s.seed for s in sweep.select_runs(specs)] == [2, 3, 4]
  # A second launcher must not start a run whose lock is alive.
  assert sweep.execute_run(specs[0]) is None
  run_directory.unlock(held, specs[0].run_dir)


def test_status_lists_expected_runs_not_started(tmp_path):
  specs = sweep.expand(['nc_cr_dqn'], ['breakout'], [7], str(tmp_path))
  statuses = sweep.sweep_status(str(tmp_path), specs)
  assert [(s.agent, s.game, s.seed, s.state) for s in statuses] == [
      ('nc_cr_dqn', 'breakout', 7, 'pending')]


def test_cli_sweep_and_status(tmp_path, fake_template):
  root = tmp_path / 'runs'
  command = [sys.executable, '-m', 'scripts.experiments.sweep', '--agents=cr_dqn',
             '--games=pong', '--seeds=1,2', f'--root_dir={root}',
             f'--command_template={fake_template}', '--parallel=2',
             '--flags=--num_iterations=1']
  result = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
  assert result.returncode == 0, result.stderr
  assert '2 done, 0 running, 0 failed, 0 pending' in result.stdout
  again = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                         timeout=120)
  assert '0 to launch' in again.stdout
  status = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.sweep', '--status', f'--root_dir={root}'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert status.returncode == 0, status.stderr
  lines = status.stdout.splitlines()
  assert lines[0].split() == ['agent', 'game', 'seed', 'state', 'last_iter',
                              'detail']
  assert lines[1].split() == ['cr_dqn', 'pong', '1', 'done', '1']
  bad = subprocess.run(command[:3] + ['--agents=dqn', f'--root_dir={root}'],
                       cwd=REPO, capture_output=True, text=True, timeout=60)
  assert bad.returncode != 0 and 'Unknown agent' in bad.stderr


class _Ref:
  """A hashable stand-in for a Ray ObjectRef holding its result."""

  def __init__(self, value):
    self.value = value


class FakeRay(types.ModuleType):
  """Just enough of Ray's API: tasks run synchronously when submitted."""

  def __init__(self):
    super().__init__('ray')
    self.address = None
    self.resources = None

  def init(self, address=None):
    self.address = address

  def remote(self, **resources):
    self.resources = resources

    def wrap(fn):
      # A unique object per task, like Ray's ObjectRefs.
      return types.SimpleNamespace(remote=lambda *a: _Ref(fn(*a)))
    return wrap

  def wait(self, refs, num_returns=1):
    return refs[:num_returns], refs[num_returns:]

  def get(self, ref):
    return ref.value


def test_ray_mode_declares_resources_per_run(tmp_path, fake_template,
                                             monkeypatch):
  fake_ray = FakeRay()
  monkeypatch.setitem(sys.modules, 'ray', fake_ray)
  specs = make_specs(tmp_path / 'runs', fake_template,
                     extra=['--num_iterations=1'])
  results = sweep.run_ray(specs, 'ray://head:10001', cpus_per_run=4,
                          gpus_per_run=1)
  assert results == {s.run_dir: 0 for s in specs}
  assert fake_ray.address == 'ray://head:10001'
  assert fake_ray.resources == {'num_cpus': 4, 'num_gpus': 1}
  assert {s.state for s in sweep.sweep_status(str(tmp_path / 'runs'))} == {
      'done'}


def test_missing_ray_gives_a_clear_error(monkeypatch):
  monkeypatch.setitem(sys.modules, 'ray', None)  # import ray -> ImportError
  with pytest.raises(ImportError, match=r"pip install '\.\[sweep\]'"):
    sweep.run_ray([], 'auto', 1, 0)


@pytest.mark.end_to_end
def test_end_to_end_two_tiny_real_runs_then_skip(tmp_path):
  root = tmp_path / 'runs'
  tiny = ('--num_iterations=1 --num_train_frames=400 --num_eval_frames=200 '
          '--replay_capacity=1000 --min_replay_capacity_fraction=0.1 '
          '--batch_size=4 --max_frames_per_episode=400 '
          '--target_network_update_period=400 --num_quantiles=11 '
          '--hidden_size=16')
  command = [sys.executable, '-m', 'scripts.experiments.sweep', '--agents=cr_dqn',
             '--games=pong', '--seeds=1,2', f'--root_dir={root}',
             '--parallel=2', f'--flags={tiny}']
  result = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                          timeout=600)
  logs = ''.join(open(p).read() for p in root.glob('*/*/*/run.log'))
  assert result.returncode == 0, result.stdout + result.stderr + logs
  assert '2 done' in result.stdout
  for seed in (1, 2):
    assert sweep.is_finished(
        str(root / 'cr_dqn' / 'pong' / f'seed_{seed}' / 'results.csv'), 1)
  again = subprocess.run(command, cwd=REPO, capture_output=True, text=True,
                         timeout=120)
  assert again.returncode == 0
  assert '0 to launch' in again.stdout


def _alive(pid):
  try:
    os.kill(pid, 0)
  except ProcessLookupError:
    return False
  return True


def test_killed_sweep_stops_its_runs_and_leaves_them_pending(tmp_path):
  root = tmp_path / 'runs'
  sleeper = tmp_path / 'sleeper.py'
  sleeper.write_text('import time\ntime.sleep(60)\n')
  sweep_process = subprocess.Popen(
      [sys.executable, '-m', 'scripts.experiments.sweep', '--agents=cr_dqn',
       '--games=pong', '--seeds=1,2,3', f'--root_dir={root}', '--parallel=2',
       f'--command_template={{python}} {sleeper}'],
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
  pid_files = [root / 'cr_dqn' / 'pong' / f'seed_{s}' / 'run.lock'
               for s in (1, 2)]
  children = []
  for _ in range(300):
    locks = [sweep._read_json(str(p)) for p in pid_files]
    if all(lock and lock['pid'] != sweep_process.pid for lock in locks):
      children = [lock['pid'] for lock in locks]
      break
    time.sleep(0.1)
  assert len(children) == 2, 'the runs did not start'
  sweep_process.terminate()
  try:
    output, _ = sweep_process.communicate(timeout=30)
  except subprocess.TimeoutExpired:
    sweep_process.kill()  # Leave nothing running, then fail below.
    output = 'timed out stopping: ' + sweep_process.communicate()[0]
    for pid in children:
      if _alive(pid):
        os.kill(pid, 9)
  assert sweep_process.returncode == 130, output
  assert '0 done, 0 running, 0 failed, 3 pending' in output
  for pid in children:
    assert not _alive(pid)


def test_ray_mode_on_a_local_ray_instance(tmp_path, fake_template):
  import ray  # pylint: disable=g-import-not-at-top  (in the 'test' extra)
  specs = make_specs(tmp_path / 'runs', fake_template,
                     extra=['--num_iterations=2'])
  try:
    # 'local' starts a private single-node cluster, as a head node would be.
    results = sweep.run_ray(specs, 'local', cpus_per_run=1, gpus_per_run=0)
  finally:
    ray.shutdown()
  assert results == {s.run_dir: 0 for s in specs}
  statuses = sweep.sweep_status(str(tmp_path / 'runs'))
  assert {s.state for s in statuses} == {'done'}
  assert sorted(s.last_iteration for s in statuses) == [2, 2]
