"""Tests for zoo.loops.runner's run control: --help, input checks, finished and
extended runs, the checkpoint disk check, and clean interrupts (subprocesses
of the real entry points)."""

import dataclasses
import os
import selectors
import signal
import subprocess
import sys
import time
import types

import pytest

from tests import tb_events
from zoo.configuration import agent_registry
from zoo.storage import checkpoint
from zoo.loops import driver
from zoo.loops import phase_accounting
from zoo.loops import runner
from zoo.storage import results_csv
from zoo.loops import resume
from zoo.suites import atari_suite
from zoo.storage import run_json
from zoo.configuration import settings as settings_lib

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
ENV = dict(os.environ, PYTHONPATH=ROOT)
CR_DQN = agent_registry.default_preset('cr_dqn')
QR_DQN = agent_registry.default_preset('qr_dqn')
TINY_FLAGS = [
    '--environment_name=pong', '--replay_capacity=400',
    '--min_replay_capacity_fraction=0.1', '--batch_size=8',
    '--num_iterations=1', '--num_train_frames=400', '--num_eval_frames=80',
    '--num_quantiles=11', '--hidden_size=16',
    '--target_network_update_period=160', '--seed=3',
    '--tensorboard_loss_period=64',
]


def _entry(agent, *args):
  return subprocess.run([sys.executable, '-m', f'{agent}.run_atari', *args],
                        cwd=ROOT, env=ENV, capture_output=True, text=True,
                        timeout=300)


def _settings(tmp_path, **overrides):
  s = dict(settings_lib.default_settings(atari_suite.ATARI),
           environment_name='pong', num_iterations=1, num_train_frames=400,
           replay_capacity=400, min_replay_capacity_fraction=0.1,
           batch_size=8, results_csv_path=str(tmp_path / 'run/results.csv'),
           checkpoint_dir=str(tmp_path / 'run/ckpt'))
  s.update(overrides)
  return s


def _no_environment(*unused_args):
  raise AssertionError('must stop before building environments')


def test_help_lists_the_runs_own_flags_with_defaults():
  out = _entry('nc_qr_dqn', '--help').stdout  # absl exits 1 after --help.
  assert out.startswith('NC-QR-DQN on Atari')
  for flag in settings_lib.SETTINGS:
    assert f'--{flag}' in out or f'--[no]{flag}' in out, flag
  assert "(default: '1000000')" in out  # --num_train_frames
  assert 'absltest' not in out and '--xla_' not in out
  assert len(out.splitlines()) < 200


def test_bad_paths_and_counts_are_refused_before_any_work(tmp_path):
  (tmp_path / 'dir').mkdir()
  (tmp_path / 'file').write_text('x')
  result = _entry('cr_dqn', f'--results_csv_path={tmp_path / "dir"}',
                  f'--checkpoint_dir={tmp_path / "c"}')
  assert result.returncode == 1
  assert result.stderr.strip().splitlines()[-1] == (
      f'Error: --results_csv_path={tmp_path / "dir"} is a directory; pass a '
      f'file path, e.g. {tmp_path / "dir" / "results.csv"}.')
  result = _entry('cr_dqn', f'--checkpoint_dir={tmp_path / "file"}',
                  f'--results_csv_path={tmp_path / "r.csv"}')
  assert result.returncode == 1
  assert f'--checkpoint_dir={tmp_path / "file"} is a file; pass a directory' \
      in result.stderr
  result = _entry('cr_dqn', '--num_train_frames=2.5e0')
  assert result.returncode == 1
  assert "'2.5e0' is not an integer count" in result.stderr
  assert 'JAX device' not in result.stderr  # Nothing started.
  result = _entry('qr_dqn', '--preset=CR-DQN')
  assert result.returncode == 1
  assert result.stderr.strip().splitlines()[-1] == (
      "Error: Unknown preset 'CR-DQN'; this agent runs QR-DQN-1, QR-DQN-0 "
      '(--preset=NAME).')


def _rows(count):
  """Return rows of iterations 0..count - 1 (values that parse back)."""
  return [dict({c: 0.5 for c in results_csv.COLUMNS}, iteration=i, seed=3)
          for i in range(count)]


def _finished_checkpoint(tmp_path, **overrides):
  """Write the checkpoint of a finished run (as if it ran) for settings."""
  s = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN,
                                    _settings(tmp_path, **overrides))
  config = s.checkpoint_config()
  rows = _rows(s.num_iterations + 1)
  checkpoint.save(s.checkpoint_dir, s.num_iterations,
                  {'iteration': s.num_iterations + 1, 'config': config,
                   'rows': rows,
                   'results_csv_path': os.path.abspath(s.results_csv_path),
                   'checkpoint_dir': os.path.abspath(s.checkpoint_dir)}, {})
  return s


def test_rerunning_a_finished_run_says_it_is_complete(tmp_path, capsys):
  s = _finished_checkpoint(tmp_path, num_iterations=3)
  rows = runner.run(atari_suite.ATARI, CR_DQN,
                        _settings(tmp_path, num_iterations=3), make_environment=_no_environment)
  assert [r['iteration'] for r in rows] == [0, 1, 2, 3]
  # The CSV was missing: it is rewritten from the checkpoint.
  assert len(results_csv.read_rows(s.results_csv_path)) == 4
  out = capsys.readouterr().out
  assert out == (
      f'Run complete: iterations 0..3 are in {s.results_csv_path} '
      f'(checkpoint {s.checkpoint_dir}/iteration_000003); nothing to do. '
      'To train longer, raise --num_iterations and keep the ε schedule of the '
      'frames run (ε decays over 24 frames) with '
      '--exploration_epsilon_decay_frame_fraction = 24 / (num_iterations x '
      '400), e.g. --num_iterations=6 '
      '--exploration_epsilon_decay_frame_fraction=0.01.\n')
  # The command it gives resumes (raising --num_iterations alone would not).
  flags = dict(flag[2:].split('=') for flag in
               out.rstrip('.\n').split('e.g. ')[1].split())
  extended = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN, _settings(
      tmp_path, num_iterations=int(flags['num_iterations']),
      exploration_epsilon_decay_frame_fraction=float(
          flags['exploration_epsilon_decay_frame_fraction'])))
  assert resume.check_resume(extended).meta['iteration'] == 4
  with pytest.raises(settings_lib.ConfigError, match='ε schedule'):
    resume.check_resume(settings_lib.resolve_settings(
        atari_suite.ATARI, CR_DQN, _settings(tmp_path, num_iterations=6)))


def _cut_last_row(path, keep_bytes_from_end=30):
  with open(path) as f:
    text = f.read()
  with open(path, 'w') as f:
    f.write(text[:-keep_bytes_from_end])


def test_a_damaged_csv_is_rewritten_from_the_checkpoint_before_any_work(
    tmp_path, capsys):
  s = _finished_checkpoint(tmp_path, num_iterations=3)
  results_csv.write_rows(s.results_csv_path, _rows(4))
  intact = results_csv.read_rows(s.results_csv_path)
  _cut_last_row(s.results_csv_path)
  rows = runner.run(atari_suite.ATARI, CR_DQN,
                    _settings(tmp_path, num_iterations=3),
                    make_environment=_no_environment)
  assert [r['iteration'] for r in rows] == [0, 1, 2, 3]
  assert results_csv.read_rows(s.results_csv_path) == intact
  assert results_csv.damage(s.results_csv_path) is None
  out, err = capsys.readouterr()
  assert out.startswith('Run complete: iterations 0..3')
  assert (f'The results CSV {s.results_csv_path} is damaged at line 5 ('
          in err)
  assert (': rewrote its rows of iterations 0..3 from the checkpoint '
          f'{s.checkpoint_dir}/iteration_000003.') in err


def test_a_damaged_csv_without_a_checkpoint_is_refused_naming_the_line(
    tmp_path):
  s = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN,
                                    _settings(tmp_path))
  results_csv.write_rows(s.results_csv_path, _rows(1))
  _cut_last_row(s.results_csv_path)
  with pytest.raises(settings_lib.ConfigError) as error:
    runner.run(atari_suite.ATARI, CR_DQN, _settings(tmp_path),
               make_environment=_no_environment)
  assert str(error.value).startswith(
      f'The results CSV {s.results_csv_path} is damaged at line 2 (')
  assert str(error.value).endswith(
      'and no checkpoint holds its rows to rewrite it from. To keep its '
      'finished rows, pass the --checkpoint_dir of the run that wrote it; to '
      'start over, add --restart (moves it to '
      f'{s.results_csv_path}.<time>.bak; nothing is deleted).')
  assert len(open(s.results_csv_path).read().splitlines()) == 2  # Kept.


def test_a_damaged_csv_is_refused_when_the_checkpoint_would_drop_rows(
    tmp_path):
  # The checkpoint holds iterations 0..1; the CSV 0..3, line 3 damaged.
  s = _finished_checkpoint(tmp_path, num_iterations=1)
  results_csv.write_rows(s.results_csv_path, _rows(4))
  with open(s.results_csv_path) as f:
    lines = f.read().splitlines(keepends=True)
  lines[2] = lines[2][:20] + '\r\n'
  with open(s.results_csv_path, 'w') as f:
    f.write(''.join(lines))
  with pytest.raises(settings_lib.ConfigError, match=(
      r'is damaged at line 3 \(.*\); its newest intact checkpoint .* holds the '
      r'rows of iterations 0..1 only, and rewriting the CSV from it would '
      r'drop the finished rows up to iteration 3. Repair line 3 by hand')):
    runner.run(atari_suite.ATARI, CR_DQN,
               _settings(tmp_path, num_iterations=3),
               make_environment=_no_environment)


def test_extending_a_finished_run_keeps_or_explains_the_epsilon_schedule(
    tmp_path):
  # 3 iterations of 400 frames: ε decays over 0.02 * 3 * 400 = 24 frames,
  # from frame 160 (the replay's minimum), long before the 1200 frames run.
  _finished_checkpoint(tmp_path, num_iterations=3)
  with pytest.raises(settings_lib.ConfigError) as error:
    runner.run(atari_suite.ATARI, CR_DQN,
                   _settings(tmp_path, num_iterations=5), make_environment=_no_environment)
  assert str(error.value) == (
      'Changing --num_iterations from 3 to 5 would change the ε schedule of '
      'the 1200 frames already run: ε decays over '
      'exploration_epsilon_decay_frame_fraction x num_iterations x '
      'num_train_frames = 24 frames in the checkpoint, 40 now. To extend the '
      'run with the same schedule, add '
      '--exploration_epsilon_decay_frame_fraction=0.012 (same 24 frames).')
  extended = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN, _settings(
      tmp_path, num_iterations=5,
      exploration_epsilon_decay_frame_fraction=0.012))
  assert resume.check_resume(extended).meta['iteration'] == 4
  with pytest.raises(settings_lib.ConfigError, match=(
      r'^Changing --exploration_epsilon_decay_frame_fraction from 0.02 to '
      r'0.03 would change the ε schedule')):
    runner.run(atari_suite.ATARI, CR_DQN, _settings(
        tmp_path, num_iterations=3,
        exploration_epsilon_decay_frame_fraction=0.03), make_environment=_no_environment)
  with pytest.raises(settings_lib.ConfigError,
                     match='iterations 0..3; --num_iterations=2 is fewer'):
    runner.run(atari_suite.ATARI, CR_DQN,
                   _settings(tmp_path, num_iterations=2), make_environment=_no_environment)
  with pytest.raises(settings_lib.ConfigError,
                     match='--learning_rate=5e-05 in the checkpoint'):
    runner.run(atari_suite.ATARI, CR_DQN,
                   _settings(tmp_path, num_iterations=5, learning_rate=1e-3),
                   make_environment=_no_environment)


def test_extension_before_epsilon_decays_needs_no_change(tmp_path):
  # The replay minimum (10% of 1e5 = 1e4 transitions, 4e4 frames) is not
  # reached in 1200 frames: ε has not moved, any decay length keeps it.
  _finished_checkpoint(tmp_path, num_iterations=3, replay_capacity=100_000)
  s = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN, _settings(
      tmp_path, num_iterations=5, replay_capacity=100_000))
  assert resume.check_resume(s).meta['iteration'] == 4
  finished = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN,
                                           _settings(tmp_path, num_iterations=3,
                                                     replay_capacity=100_000))
  assert resume.how_to_extend(finished) == (
      'To train longer, raise --num_iterations (e.g. --num_iterations=6).')


def test_a_checkpoint_disk_too_small_for_the_replay_is_refused(
    tmp_path, monkeypatch):
  usage = runner.shutil.disk_usage(str(tmp_path))
  monkeypatch.setattr(runner.shutil, 'disk_usage',
                      lambda path: usage._replace(free=5 * 10**9))
  with pytest.raises(settings_lib.ConfigError) as error:
    runner.run(atari_suite.ATARI, CR_DQN, _settings(
        tmp_path, replay_capacity=10**6, num_iterations=200,
        num_train_frames=10**6), make_environment=_no_environment)
  assert str(error.value).startswith(
      f'The disk of --checkpoint_dir={tmp_path}/run/ckpt has 5.00 GB free; '
      "this run's checkpoints need 8.84 GB for the replay (1,250,000 "
      'transitions of 7,072 B, as --loop=python saves them), of which 0.00 '
      'GB are already saved.')
  # A short run needs only its own steps: 2 x 100 transitions.
  s = settings_lib.resolve_settings(atari_suite.ATARI, CR_DQN, _settings(
      tmp_path, num_iterations=2, num_train_frames=400,
      replay_capacity=10**6))
  assert runner.replay_checkpoint_bytes(atari_suite.ATARI, s) == 200 * 7072
  # The jitted loop's checkpoints each hold the whole replay, three at once.
  s = dataclasses.replace(s, loop='jitted')
  assert runner.replay_checkpoint_bytes(atari_suite.ATARI, s) == 3 * 10**6 * 7072


def test_results_dir_placeholder_puts_tensorboard_next_to_the_csv(tmp_path):
  s = settings_lib.resolve_settings(atari_suite.ATARI, QR_DQN, dict(
      settings_lib.default_settings(atari_suite.ATARI), environment_name='pong'))
  assert s.tensorboard_dir == 'runs/qr_dqn/pong/seed_1/tensorboard'
  s = settings_lib.resolve_settings(atari_suite.ATARI, QR_DQN, dict(
      settings_lib.default_settings(atari_suite.ATARI), results_csv_path=''))
  assert s.tensorboard_dir == ''  # No CSV: no default TensorBoard dir.
  config = s.checkpoint_config()
  for display in ('tensorboard_dir', 'tensorboard_loss_period',
                  'progress_interval_seconds'):
    assert display not in config  # Changing them keeps a run resumable.


class _Run:
  """A real entry-point process whose stderr is read as it comes."""

  def __init__(self, command):
    self.process = subprocess.Popen(command, cwd=ROOT, env=ENV,
                                    stdout=subprocess.PIPE,
                                    stderr=subprocess.PIPE, text=True)
    self.stderr = ''

  def wait_for(self, text, timeout=240):
    """Read stderr until `text` appears (or the process ends)."""
    selector = selectors.DefaultSelector()
    selector.register(self.process.stderr, selectors.EVENT_READ)
    deadline = time.time() + timeout
    while text not in self.stderr and time.time() < deadline:
      if selector.select(timeout=1):
        line = self.process.stderr.readline()
        if not line:
          break
        self.stderr += line
    assert text in self.stderr, self.stderr[-3000:]

  def wait_until_handling_signals(self, timeout=60):
    """Wait until the process has installed its SIGINT/SIGTERM handlers.

    Linux lists a process's caught signals in /proc; SIGTERM is caught only
    once `interrupts.install()` ran (Python catches SIGINT from the start).
    Sleeping a fixed time instead failed on a loaded CI machine.
    """
    mask = 1 << (signal.SIGTERM - 1)
    deadline = time.time() + timeout
    while time.time() < deadline:
      with open(f'/proc/{self.process.pid}/status') as f:
        caught = [l for l in f if l.startswith('SigCgt:')][0]
      if int(caught.split()[1], 16) & mask:
        return
      time.sleep(0.01)
    raise AssertionError('the handlers were never installed')

  def stop(self, signum):
    self.process.send_signal(signum)
    _, rest = self.process.communicate(timeout=240)
    self.stderr += rest
    return self.process.returncode, self.stderr


def test_sigint_and_sigterm_stop_cleanly_at_any_moment_and_resume(tmp_path):
  command = [sys.executable, '-m', 'cr_dqn.run_atari'] + TINY_FLAGS + [
      f'--results_csv_path={tmp_path}/results.csv',
      f'--checkpoint_dir={tmp_path}/ckpt', '--progress_interval_seconds=0.01']
  resume_0 = ('Interrupted ({}) at iteration 0, frame 0; rerun the same '
              'command to resume from iteration 0.')
  # During the imports (JAX), then just before compiling (SIGTERM), each
  # recorded and acted on at the next safe point.
  run = _Run(command)
  run.wait_until_handling_signals()
  assert run.stop(signal.SIGINT)[0] == 130
  assert run.stderr.strip().splitlines() == [resume_0.format('SIGINT')]
  run = _Run(command)
  run.wait_for('Replay: 400 transitions')
  code, stderr = run.stop(signal.SIGTERM)
  # Recorded before iteration 0 began, or at its first safe point inside it.
  assert code == 143 and stderr.strip().splitlines()[-1] in (
      resume_0.format('SIGTERM'), resume_0.format('SIGTERM')[:-1] +
      " (iteration 0's partial work is not saved: the rerun does that "
      'iteration again from its start).')
  # Mid-phase, once iteration 0 is checkpointed.
  run = _Run(command)
  run.wait_for('iteration 1/1 train: ')
  code, stderr = run.stop(signal.SIGINT)
  assert code == 130
  last = stderr.strip().splitlines()[-1]
  assert last.startswith('Interrupted (SIGINT) at iteration 1, frame ')
  assert last.endswith(
      "; rerun the same command to resume from iteration 1 (iteration 1's "
      'partial work is not saved: the rerun does that iteration again from '
      'its start).')
  for output in (stderr, run.stderr):
    assert 'Traceback' not in output and 'Fatal Python error' not in output
  assert len(results_csv.read_rows(f'{tmp_path}/results.csv')) == 1
  # A second signal exits at once.
  run = _Run(command)
  run.wait_until_handling_signals()
  run.process.send_signal(signal.SIGINT)
  time.sleep(0.2)
  code, stderr = run.stop(signal.SIGINT)
  assert code == 130 and 'Second interrupt: exiting now.' in stderr

  done = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True,
                        text=True, timeout=300)
  assert done.returncode == 0, done.stderr[-3000:]
  assert 'at iteration 1.' in done.stderr  # Resumed.
  assert [r['iteration'] for r in results_csv.read_rows(
      f'{tmp_path}/results.csv')] == ['0', '1']
  # What the run wrote beside its CSV: run.json and TensorBoard scalars,
  # each step once although iteration 1 started twice.
  saved = run_json.read(str(tmp_path))
  assert (saved['agent'], saved['suite']) == ('cr_dqn', 'atari')
  assert saved['settings']['num_train_frames'] == 400
  assert set(saved['settings']) == set(settings_lib.SETTINGS) | {'agent',
                                                               'suite'}
  scalars = tb_events.read_scalars(str(tmp_path / 'tensorboard'))
  assert [s for s, _ in scalars['eval/episode_return']] == [0, 400]
  assert [s for s, _ in scalars['train/episode_return']] == [400]
  losses = [s for s, _ in scalars['train/loss']]
  assert losses and losses == sorted(set(losses))
  # Rerunning the finished run says so.
  again = subprocess.run(command, cwd=ROOT, env=ENV, capture_output=True,
                         text=True, timeout=300)
  assert again.returncode == 0
  assert again.stdout.startswith(
      f'Run complete: iterations 0..1 are in {tmp_path}/results.csv')


class _FakeLoop(driver.Loop):
  """Evaluates only, returning each seed's number as its return."""

  def __init__(self, runs):
    self._seeds = [s.seed for s in runs]
    self.learners = [types.SimpleNamespace(frame_t=0, num_updates=0,
                                           last_loss=None) for _ in runs]

  def restore(self, paths):
    raise AssertionError('nothing to resume')

  def train(self, iteration, on_step):
    raise AssertionError('iteration 0 only')

  def evaluate(self, iteration, on_step):
    on_step(10)
    return [phase_accounting.PhaseStats(float(seed), 1, 10, 10.0, 1.0)
            for seed in self._seeds]

  def save(self, iteration, rows):
    pass


@pytest.mark.parametrize('vmaps', [True, False])
def test_run_seeds_groups_the_seeds_as_the_loop_module_says(
    tmp_path, monkeypatch, vmaps):
  """--loop=NAME is zoo.loops.NAME_loop: one group of every seed where it
  vmaps them, else one per seed; the driver writes each seed's rows."""
  from zoo.suites import minatar_suite  # pylint: disable=g-import-not-at-top
  calls = []

  def make(suite, preset, runs):
    calls.append((suite.name, preset.name, [s.seed for s in runs]))
    return _FakeLoop(runs)

  module = types.SimpleNamespace(vmaps_seeds=lambda suite: vmaps, make=make,
                                 check=lambda suite, s: calls.append('check'))
  monkeypatch.setattr(runner, '_loop_module', lambda name: module)
  preset = agent_registry.presets()['CR-DQN']
  values = dict(loop='jitted', num_iterations=0, results_csv_path=str(
      tmp_path / '{agent}/seed_{seed}/results.csv'), checkpoint_dir='',
      tensorboard_dir='')
  rows = runner.run_seeds(minatar_suite.MINATAR, preset, values, [1, 2])
  assert [[r['eval_episode_return'] for r in seed_rows]
          for seed_rows in rows] == [[1.0], [2.0]]
  assert [r[0]['environment_name'] for r in rows] == ['minatar-breakout'] * 2
  groups = ([[1, 2]] if vmaps else [[1], [2]])
  assert calls == ['check', 'check'] + [('minatar', 'CR-DQN', g)
                                        for g in groups]
  assert len(results_csv.read_rows(
      str(tmp_path / 'cr_dqn' / 'seed_2' / 'results.csv'))) == 1


def test_a_loop_the_suite_does_not_list_is_refused(tmp_path):
  preset = agent_registry.presets()['CR-DQN']
  python_only = atari_suite.ATARI._replace(loops=('python',))
  with pytest.raises(settings_lib.ConfigError, match='--loop=python'):
    runner.run_seeds(python_only, preset, dict(
        loop='jitted', results_csv_path=str(tmp_path / 'r.csv')), [1])


@pytest.mark.parametrize('where', ['in_phase', 'between_iterations'])
def test_an_interrupt_says_whether_the_iteration_is_done_again(
    tmp_path, monkeypatch, where):
  """A stop inside an iteration says its partial work is redone."""
  from zoo.loops import interrupts  # pylint: disable=g-import-not-at-top
  from zoo.suites import minatar_suite  # pylint: disable=g-import-not-at-top

  class Interrupted(_FakeLoop):

    def evaluate(self, iteration, on_step):
      if where == 'in_phase':
        monkeypatch.setattr(interrupts, '_pending', signal.SIGINT)
      stats = super().evaluate(iteration, on_step)
      monkeypatch.setattr(interrupts, '_pending', signal.SIGINT)
      return stats

  module = types.SimpleNamespace(vmaps_seeds=lambda suite: True,
                                 make=lambda suite, preset, runs:
                                 Interrupted(runs),
                                 check=lambda suite, s: None,
                                 checkpoint_transitions=lambda s: 0)
  monkeypatch.setattr(runner, '_loop_module', lambda name: module)
  values = dict(num_iterations=0, results_csv_path=str(
      tmp_path / 'results.csv'), tensorboard_dir='')
  with pytest.raises(interrupts.Interrupted) as error:
    runner.run_seeds(minatar_suite.MINATAR, agent_registry.presets()['CR-DQN'],
                     values, [1])
  if where == 'in_phase':
    assert error.value.message == (
        'Interrupted (SIGINT) at iteration 0, frame 0; rerun the same command '
        "to resume from iteration 0 (iteration 0's partial work is not saved: "
        'the rerun does that iteration again from its start).')
  else:  # Iteration 0 is done and saved: nothing is redone.
    assert error.value.message == (
        'Interrupted (SIGINT) at iteration 0, frame 0; rerun the same command '
        'to resume from iteration 1.')
