"""Tests for zoo.storage.run_directory: nothing a run has written is ever lost.

Unit tests of the checks, then fault tests through real MinAtar entry-point
processes on real files: a damaged newest checkpoint (one file of each kind,
each kind of damage once; zoo/storage/checkpoint.py's tests cover every file x every
damage in-process), none intact, SIGKILL and a full disk in the middle of a
checkpoint write, deleted checkpoints, another run's checkpoint directory;
two processes on one run directory, for both loops.
"""

import fcntl
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import threading
import time

import pytest

from scripts.analysis import evaluate
from tests import compile_flags
from zoo.configuration import agent_registry
from zoo.configuration import settings as settings_lib
from zoo.loops import resume
from zoo.loops import runner
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read
from zoo.storage import results_csv
from zoo.storage import run_directory
from zoo.suites import minatar_suite

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# One XLA thread: runs in different processes then compute bit-identical
# updates (compile_flags.ONE_THREAD).
ENV = compile_flags.one_thread_environment(PYTHONPATH=ROOT)
TINY = dict(environment_name='breakout', num_iterations=2,
            num_train_frames=200, num_eval_frames=100, replay_capacity=1000,
            num_quantiles=5, hidden_size=8, target_network_update_period=100,
            progress_interval_seconds=0.0)
NEWEST = 'checkpoints/iteration_000002'
PREVIOUS = 'checkpoints/iteration_000001'


def _command(run_dir, *extra, fault=None):
  faulty = ['-m', 'tests.checkpoint_faults', fault] if fault else ['-m']
  return ([sys.executable, *faulty, 'cr_dqn.run_minatar'] +
          [f'--{k}={v}' for k, v in TINY.items()] +
          [f'--results_csv_path={run_dir}/results.csv', *extra])


def _run(run_dir, *extra, fault=None):
  result = subprocess.run(_command(run_dir, *extra, fault=fault), cwd=ROOT,
                          env=ENV, capture_output=True, text=True, timeout=300)
  assert 'Traceback' not in result.stderr, result.stderr[-3000:]
  return result


def _last_line(result):
  return result.stderr.strip().splitlines()[-1]


def _csv(run_dir):
  return [{c: row[c] for c in results_csv.DETERMINISTIC_COLUMNS}
          for row in results_csv.read_rows(f'{run_dir}/results.csv')]


@pytest.fixture(scope='module')
def base(tmp_path_factory):
  """A finished run: iterations 0..2, checkpoints 1 and 2 kept."""
  run_dir = tmp_path_factory.mktemp('base')
  result = _run(run_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  assert sorted(os.listdir(run_dir / 'checkpoints')) == [
      'iteration_000001', 'iteration_000002', 'replay']
  return run_dir


def _copy(base_dir, tmp_path, name='run'):
  run_dir = tmp_path / name
  shutil.copytree(base_dir, run_dir)
  return run_dir


CR_DQN = agent_registry.default_preset('cr_dqn')


def _settings(run_dir, **overrides):
  s = dict(settings_lib.default_settings(minatar_suite.MINATAR), **TINY)
  s.update(results_csv_path=str(run_dir / 'results.csv'), **overrides)
  return s


def _no_environment(*unused_args):
  raise AssertionError('must stop before building environments')


# The checks.

def test_a_checkpoint_belongs_to_its_results_csv_or_a_moved_copy(tmp_path):
  meta = {'results_csv_path': '/a/run/results.csv',
          'checkpoint_dir': '/a/run/checkpoints'}
  run_directory.check_owner(meta, '/a/run/checkpoints', '/a/run/results.csv')
  run_directory.check_owner(meta, '/b/moved/checkpoints',
                            '/b/moved/results.csv')
  with pytest.raises(run_directory.Refused) as error:
    run_directory.check_owner(meta, '/a/run/checkpoints', '/b/results.csv')
  assert str(error.value) == (
      'The checkpoint directory /a/run/checkpoints belongs to another run: '
      'its results CSV is /a/run/results.csv, not /b/results.csv. To continue '
      'that run, pass --results_csv_path=/a/run/results.csv; for a new run, '
      'pass a new --checkpoint_dir (by default the checkpoints lie beside the '
      "results CSV, in its directory's checkpoints/).")


def test_finished_rows_are_kept_unless_an_interrupted_save_explains_them(
    tmp_path):
  path = str(tmp_path / 'results.csv')
  results_csv.write_rows(path, [
      dict({c: 0.5 for c in results_csv.COLUMNS}, iteration=i)
      for i in range(4)])
  ckpt = str(tmp_path / 'checkpoints')
  run_directory.check_rows(path, ckpt, 3, [])  # Row 3: killed before its save.
  run_directory.check_rows(path, ckpt, 4, [])
  damaged = [checkpoint.Damage(f'{ckpt}/iteration_000002', 'f', 'empty')]
  run_directory.check_rows(path, ckpt, 2, damaged)  # Fallback from 2.
  with pytest.raises(run_directory.Refused) as error:
    run_directory.check_rows(path, ckpt, 2, [])
  assert str(error.value) == (
      f'The results CSV {path} holds iterations 0..3, but the newest intact '
      f'checkpoint in {ckpt} resumes at iteration 2: going on would replace '
      'the finished rows of iterations 2..3. To keep them, pass the '
      '--checkpoint_dir of the run that wrote this CSV (or put its '
      'checkpoints back); to start over, add --restart (moves the CSV to '
      f'{path}.<time>.bak; nothing is deleted).')
  with pytest.raises(run_directory.Refused, match=(
      'this run has no --checkpoint_dir, so it starts at iteration 0: going '
      'on would replace the finished rows of iterations 0..3')):
    run_directory.check_rows(path, '', 0, [])


def test_one_run_one_directory_by_default(tmp_path):
  s = settings_lib.resolve_settings(minatar_suite.MINATAR, CR_DQN, dict(
      settings_lib.default_settings(minatar_suite.MINATAR),
      results_csv_path=str(tmp_path / 'y/results.csv')))
  assert s.checkpoint_dir == str(tmp_path / 'y/checkpoints')
  assert s.tensorboard_dir == str(tmp_path / 'y/tensorboard')
  s = settings_lib.resolve_settings(minatar_suite.MINATAR, CR_DQN, dict(
      settings_lib.default_settings(minatar_suite.MINATAR)))
  assert s.checkpoint_dir == (
      'runs/minatar/cr_dqn/breakout/seed_1/checkpoints')


def test_minatar_help_speaks_of_its_own_learn_period():
  out = subprocess.run(
      [sys.executable, '-m', 'cr_dqn.run_minatar', '--help'], cwd=ROOT,
      env=ENV, capture_output=True, text=True, timeout=120).stdout
  assert "--learn_period: Frames between updates.\n    (default: '4')" in out
  assert '16 frames' not in out and '--[no]restart' in out
  assert ("--checkpoint_dir: Checkpoint directory, resumed from when it holds "
          'one;') in out


# Through the entry point.

@pytest.mark.parametrize('file,how', [
    ('tree.npz', 'corrupted'), ('meta.json', 'truncated'),
    ('replay/steps_000000000200_000000000400/rewards.npy', 'emptied')])
def test_a_damaged_newest_checkpoint_falls_back_and_ends_the_same(
    base, tmp_path, file, how):
  run_dir = _copy(base, tmp_path)
  damaged = run_dir / ('checkpoints/' + file if file.startswith('replay')
                       else f'{NEWEST}/{file}')
  size = os.path.getsize(damaged)
  if how == 'corrupted':  # Zeros inside: the zip's CRC case.
    with open(damaged, 'r+b') as f:
      f.seek(size // 2)
      f.write(bytes(64))
  else:
    os.truncate(damaged, size // 2 if how == 'truncated' else 0)
  result = _run(run_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  warning = [line for line in result.stderr.splitlines()
             if line.startswith('Warning:')]
  assert len(warning) == 1
  assert warning[0].startswith(
      f'Warning: the newest checkpoint is damaged: {damaged} is ')
  assert warning[0].endswith(f'Using the previous one, {run_dir / PREVIOUS}. '
                             'The run goes on from iteration 2.')
  assert 'at iteration 2.' in result.stderr  # Resumed from iteration 1's.
  assert _csv(run_dir) == _csv(base)
  assert checkpoint_read.newest_intact(str(run_dir / 'checkpoints')) == (
      str(run_dir / NEWEST), [])


def test_no_intact_checkpoint_stops_before_any_work_naming_the_files(
    base, tmp_path):
  run_dir = _copy(base, tmp_path)
  os.truncate(run_dir / NEWEST / 'tree.npz', 1000)
  (run_dir / PREVIOUS / 'meta.json').write_text('')
  result = _run(run_dir)
  assert result.returncode == 1
  message = (
      f'No intact checkpoint in {run_dir}/checkpoints: {run_dir / NEWEST}/'
      'tree.npz is truncated (1,000 bytes, ')
  assert _last_line(result).startswith(f'Error: {message}')
  assert _last_line(result).endswith(
      f'{run_dir / PREVIOUS}/meta.json is empty (0 bytes). Either pass another '
      f'--checkpoint_dir, or move the run directory {run_dir} aside, or add '
      "--restart (moves the run's files aside to <name>.<time>.bak) to start "
      'over.')
  assert 'JAX device' not in result.stderr  # Nothing started.
  assert _csv(run_dir) == _csv(base)
  # scripts.analysis.evaluate says the same, and can pick among the kept ones.
  with pytest.raises(checkpoint.DamagedError, match=f'^{re.escape(message)}'):
    evaluate.evaluate(str(run_dir / 'checkpoints'), 1)
  with pytest.raises(checkpoint.DamagedError, match=(
      'iteration_000001 is damaged: .*meta.json is empty.* Pass another '
      '--checkpoint_dir, or the --iteration of an intact checkpoint it '
      'keeps.')):
    evaluate.evaluate(str(run_dir / 'checkpoints'), 1, iteration=1)


def test_evaluate_skips_a_damaged_newest_checkpoint_with_a_warning(
    base, tmp_path):
  run_dir = _copy(base, tmp_path)
  os.truncate(run_dir / NEWEST / 'tree.npz', 1000)
  lines, warnings = [], []
  episodes = evaluate.evaluate(str(run_dir / 'checkpoints'), 1,
                               log=lines.append, warn=warnings.append)
  assert len(episodes) == 1
  assert warnings == [
      'Warning: the newest checkpoint is damaged: '
      f'{run_dir / NEWEST}/tree.npz is truncated (1,000 bytes, '
      f'{os.path.getsize(base / NEWEST / "tree.npz"):,} written). Using the '
      f'previous one, {run_dir / PREVIOUS}.']
  assert f'checkpoint {run_dir / PREVIOUS},' in lines[0]
  with pytest.raises(ValueError, match=(
      'No checkpoint of iteration 0 in .*; it keeps --iteration=1, '
      '--iteration=2.')):
    evaluate.evaluate(str(base / 'checkpoints'), 1, iteration=0)


def test_sigkill_and_a_full_disk_mid_save_then_the_rerun_ends_the_same(
    base, tmp_path):
  # As killed after iteration 2's row, before its checkpoint was complete.
  run_dir = _copy(base, tmp_path)
  shutil.rmtree(run_dir / NEWEST)
  # Killed between two files: the new replay chunk written, the tree not.
  result = _run(run_dir, fault='kill:2:tree.npz')
  assert result.returncode == -9
  assert checkpoint_read.newest_intact(str(run_dir / 'checkpoints')) == (
      str(run_dir / PREVIOUS), [])
  # The disk fills while the chunk is written: a clear message, what the
  # save wrote removed, the previous checkpoint intact.
  result = _run(run_dir, fault='enospc:2:frames.npy')
  assert result.returncode == 1
  assert _last_line(result) == (
      f'Error: Cannot write the checkpoint of iteration 2 in '
      f'{run_dir}/checkpoints ([Errno 28] No space left on device (injected):'
      f" 'frames.npy'); what it wrote was removed, and the previous "
      f'checkpoint, {run_dir / PREVIOUS}, is intact: free some disk space (or '
      'fix the cause) and rerun the same command to resume from it.')
  assert sorted(os.listdir(run_dir / 'checkpoints' / 'replay')) == [
      'steps_000000000000_000000000200']
  result = _run(run_dir)
  assert result.returncode == 0, result.stderr[-3000:]
  assert 'at iteration 2.' in result.stderr and 'Warning' not in result.stderr
  assert _csv(run_dir) == _csv(base)


def test_deleted_checkpoints_never_drop_finished_rows_restart_moves_aside(
    base, tmp_path):
  run_dir = _copy(base, tmp_path)
  shutil.rmtree(run_dir / 'checkpoints')
  result = _run(run_dir)
  assert result.returncode == 1
  assert _last_line(result).startswith(
      f'Error: The results CSV {run_dir}/results.csv holds iterations 0..2, '
      f'but {run_dir}/checkpoints holds no checkpoint, so the run starts at '
      'iteration 0: going on would replace the finished rows of iterations '
      '0..2.')
  assert _csv(run_dir) == _csv(base)
  # --restart moves the run's files aside (nothing deleted) and starts over.
  before = (run_dir / 'results.csv').read_text()
  result = _run(run_dir, '--restart')
  assert result.returncode == 0, result.stderr[-3000:]
  moved = [line.split(' to ') for line in result.stderr.splitlines()
           if line.startswith('--restart: moved ')]
  assert [os.path.basename(a) for a, _ in moved] == [
      'results.csv', 'run.json', 'tensorboard']
  backup = moved[0][1]
  assert backup.startswith(f'{run_dir}/results.csv.') and backup.endswith(
      '.bak')
  assert open(backup).read() == before
  assert _csv(run_dir) == _csv(base)  # Run again from iteration 0.


def test_a_checkpoint_directory_of_another_run_is_refused(base, tmp_path):
  with pytest.raises(settings_lib.ConfigError, match=(
      f'^The checkpoint directory {base}/checkpoints belongs to another run: '
      f'its results CSV is {base}/results.csv, not {tmp_path}/y/results.csv.')):
    runner.run(minatar_suite.MINATAR, CR_DQN, _settings(
        tmp_path / 'y', checkpoint_dir=str(base / 'checkpoints')),
        make_environment=_no_environment)
  assert not os.path.exists(tmp_path / 'y')  # Refused: nothing left behind.
  # A run directory moved as a whole is still its own.
  moved = _copy(base, tmp_path, 'moved')
  s = settings_lib.resolve_settings(minatar_suite.MINATAR, CR_DQN,
                                    _settings(moved))
  assert resume.check_resume(s).meta['iteration'] == 3


# One process per run directory.

def test_the_lock_names_its_holder_and_dies_with_it(tmp_path):
  holder = subprocess.Popen(
      [sys.executable, '-c', 'import sys, time; from zoo.storage import run_directory;'
       ' run_directory.lock(sys.argv[1]); print("held", flush=True); '
       'time.sleep(120)', str(tmp_path)],
      cwd=ROOT, env=ENV, stdout=subprocess.PIPE, text=True)
  try:
    assert holder.stdout.readline() == 'held\n'
    assert run_directory.holder(str(tmp_path)).startswith(
        f'PID {holder.pid} on ')
    with pytest.raises(run_directory.Refused, match=(
        f'^Another process is running in {tmp_path}: PID {holder.pid} on '
        '.* since 20')):
      run_directory.lock(str(tmp_path))
  finally:
    holder.kill()  # SIGKILL: the operating system releases the lock.
    holder.wait()
  assert run_directory.holder(str(tmp_path)) is None
  fd = run_directory.lock(str(tmp_path))
  run_directory.unlock(fd, str(tmp_path))
  assert os.listdir(tmp_path) == []


def test_a_holder_that_has_not_yet_written_its_record_is_waited_for(tmp_path):
  path = tmp_path / run_directory.LOCK_FILE
  fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
  fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)  # Locked, nothing written.
  try:
    writer = threading.Timer(0.3, run_directory.record_holder, (fd, 4242))
    writer.start()
    with pytest.raises(run_directory.Refused, match=': PID 4242 on '):
      run_directory.lock(str(tmp_path))
    writer.join()
    os.ftruncate(fd, 0)  # A holder that never writes: said so, in time.
    start = time.monotonic()
    with pytest.raises(run_directory.Refused,
                       match=': a process that is starting '):
      run_directory.lock(str(tmp_path))
    assert time.monotonic() - start < 10
  finally:
    os.close(fd)


def test_a_stale_lock_is_taken_over_with_one_line_naming_its_holder(tmp_path):
  logged = []
  fd = run_directory.lock(str(tmp_path / 'new'), logged.append)
  run_directory.unlock(fd, str(tmp_path / 'new'))
  assert logged == []  # A new lock: nothing to say.
  dead = subprocess.Popen([sys.executable, '-c', 'pass'])
  dead.wait()
  path = tmp_path / run_directory.LOCK_FILE
  path.write_text(json.dumps({'pid': dead.pid, 'host': 'node7',
                              'since': time.time()}))
  fd = run_directory.lock(str(tmp_path), logged.append)
  try:
    assert len(logged) == 1
    assert re.fullmatch(
        f'{re.escape(str(path))} was left by PID {dead.pid} on node7, since '
        r'20.*, which is gone \(killed, or its machine stopped\): this '
        'process takes the run directory over.', logged[0])
    assert run_directory.holder(str(tmp_path)).startswith(
        f'PID {os.getpid()} on ')
  finally:
    run_directory.unlock(fd, str(tmp_path))


def test_a_refused_run_leaves_nothing_behind(tmp_path):
  result = _run(tmp_path / 'run', '--num_quantiles=0')
  assert result.returncode == 1
  assert _last_line(result) == 'Error: --num_quantiles must be positive, got 0.'
  assert os.listdir(tmp_path) == []


# The holder's iterations: enough to outlive a refusal of a process started
# with it (which is refused before any JAX work), few since the rest of the
# run only shows that the holder finishes.
TWO_PROCESS_ITERATIONS = 2


def _start(run_dir, loop):
  return subprocess.Popen(
      _command(run_dir, f'--loop={loop}',
               f'--num_iterations={TWO_PROCESS_ITERATIONS}',
               '--num_train_frames=400'),
      cwd=ROOT, env=ENV, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
      text=True)


def _refused_by(process, holder):
  _, stderr = process.communicate(timeout=300)
  assert process.returncode == 1, stderr[-3000:]
  errors = [line for line in stderr.splitlines() if line.startswith('Error:')]
  assert len(errors) == 1 and 'Traceback' not in stderr, stderr[-3000:]
  assert errors[0].startswith(
      'Error: Another process is running in '), errors[0]
  assert f': PID {holder.pid} on ' in errors[0], errors[0]


@pytest.mark.end_to_end
@pytest.mark.parametrize('loop', ['python', 'jitted'])
def test_two_processes_on_one_run_directory_never_both_run(tmp_path, loop):
  run_dir = tmp_path / 'run'
  together = [_start(run_dir, loop), _start(run_dir, loop)]
  try:
    while all(p.poll() is None for p in together):
      time.sleep(0.1)
    loser = next(p for p in together if p.poll() is not None)
    winner = next(p for p in together if p is not loser)
    _refused_by(loser, winner)
    assert winner.poll() is None, 'the run ended before the second started'
    # Started apart: the holder is stopped (SIGSTOP) until the newcomer has
    # been refused, so that however fast the holder runs, it still holds the
    # directory when the newcomer reaches the lock.
    winner.send_signal(signal.SIGSTOP)
    try:
      _refused_by(_start(run_dir, loop), winner)
    finally:
      winner.send_signal(signal.SIGCONT)
    _, stderr = winner.communicate(timeout=600)
    assert winner.returncode == 0, stderr[-3000:]
  finally:
    for p in together:
      if p.poll() is None:
        p.send_signal(signal.SIGKILL)
  assert [int(r['iteration']) for r in results_csv.read_rows(
      f'{run_dir}/results.csv')] == list(range(TWO_PROCESS_ITERATIONS + 1))
  assert not os.path.exists(run_dir / run_directory.LOCK_FILE)
  # Both loops write TensorBoard scalars (the driver's hooks).
  assert set(os.listdir(run_dir)) == {'results.csv', 'run.json', 'checkpoints',
                                      'tensorboard'}


def test_a_checkpoint_of_another_format_is_refused_before_any_work(
    base, tmp_path):
  run_dir = _copy(base, tmp_path)
  for name in ('iteration_000001', 'iteration_000002'):
    path = run_dir / 'checkpoints' / name / 'meta.json'
    meta = json.loads(path.read_text())
    del meta['format']  # As before formats were versioned.
    path.write_text(json.dumps(meta))
  result = _run(run_dir)
  assert result.returncode == 1
  assert _last_line(result) == (
      f'Error: The checkpoint {run_dir}/{NEWEST} has format 0; this code '
      f'reads format {checkpoint.FORMAT} only. Add --restart to start the '
      "run over (moves the run's files aside), or resume it with the code "
      'that wrote it.')
  assert _csv(run_dir) == _csv(base)
  result = _run(run_dir, '--restart')
  assert result.returncode == 0, result.stderr[-3000:]
  assert _csv(run_dir) == _csv(base)
