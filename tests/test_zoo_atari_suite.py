"""Tests for zoo.suites.atari_suite: validation, every agent end to end on a real ROM,
and resume after SIGKILL (subprocess) equal to an uninterrupted run."""

import importlib
import math
import os
import signal
import subprocess
import sys
import time

from absl import flags
import numpy as np
import pytest

from tests import compile_flags
from zoo.configuration import agent_registry
from zoo.loops import build
from zoo.storage import checkpoint
from zoo.environments import environment
from zoo.loops import runner
from zoo.storage import results_csv
from zoo.loops import resume
from zoo.suites import atari_suite
from zoo.configuration import settings as settings_lib

_preset = agent_registry.default_preset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY_FLAGS = [
    '--environment_name=pong', '--replay_capacity=400',
    '--min_replay_capacity_fraction=0.1', '--batch_size=8',
    '--num_iterations=2', '--num_train_frames=320', '--num_eval_frames=160',
    '--num_quantiles=11', '--hidden_size=16',
    '--target_network_update_period=160', '--seed=3',
]


def _resolve(preset, values):
  return settings_lib.resolve_settings(atari_suite.ATARI, preset, values)


def _settings(**overrides):
  s = dict(settings_lib.default_settings(atari_suite.ATARI), results_csv_path='',
           checkpoint_dir='')
  s.update(overrides)
  return s


@pytest.mark.parametrize('overrides,message', [
    ({'environment_name': 'pongg'}, "Unknown Atari game 'pongg'"),
    ({'num_quantiles': 0}, '--num_quantiles must be positive'),
    ({'replay_capacity': -5}, '--replay_capacity must be positive'),
    ({'batch_size': 64, 'replay_capacity': 1000},
     '--batch_size=64 exceeds the minimum replay size 50'),
    ({'min_replay_capacity_fraction': 1.5},
     '--min_replay_capacity_fraction must lie in'),
    ({'additional_discount': 1.5}, '--additional_discount must lie in'),
    ({'num_fused_updates': 0}, '--num_fused_updates must be positive'),
])
def test_bad_settings_are_refused_before_any_work(overrides, message):
  with pytest.raises(settings_lib.ConfigError, match=message):
    runner.run(atari_suite.ATARI, _preset('cr_dqn'), _settings(**overrides),
                  make_environment=_no_environment)


def _no_environment(*unused_args):
  raise AssertionError('validation must fail before building environments')


class _SmallDevice:
  def memory_stats(self):
    return {'bytes_limit': 4 * 10**9}

  def __str__(self):
    return 'cuda:0'


def test_replay_on_device_must_fit_the_devices_memory(monkeypatch):
  monkeypatch.setattr(runner.jax, 'devices', lambda: [_SmallDevice()])
  with pytest.raises(settings_lib.ConfigError,
                     match=r'needs 7\.1 GB, more than 80% of the 4\.0 GB of '
                     r'cuda:0; lower --replay_capacity'):
    runner.run(atari_suite.ATARI, _preset('cr_dqn'), _settings(replay_on_device=True),
                   make_environment=_no_environment)
  s = _resolve(_preset('cr_dqn'), _settings(
      replay_on_device=True, replay_capacity=300_000))
  runner.check_resources(atari_suite.ATARI, s)  # 2.1 GB fits.


def test_unwritable_paths_are_refused(tmp_path):
  blocker = tmp_path / 'file'
  blocker.write_text('x')
  with pytest.raises(settings_lib.ConfigError, match='results CSV'):
    runner.run(atari_suite.ATARI, _preset('qr_dqn'), _settings(
        results_csv_path=str(blocker / 'run.csv')), make_environment=_no_environment)
  with pytest.raises(settings_lib.ConfigError, match='checkpoints'):
    runner.run(atari_suite.ATARI, _preset('qr_dqn'), _settings(checkpoint_dir=str(blocker / 'c')),
                  make_environment=_no_environment)


def test_checkpoint_of_another_agent_or_config_is_refused(tmp_path):
  directory = str(tmp_path)
  s = _resolve(_preset('qr_dqn'), _settings(checkpoint_dir=directory))
  checkpoint.save(directory, 0, {'iteration': 1, 'config': s.checkpoint_config(),
                                 'results_csv_path': '',
                                 'checkpoint_dir': directory}, {}, {})
  assert resume.check_resume(s).path.endswith('iteration_000000')
  with pytest.raises(settings_lib.ConfigError,
                     match=r"--agent='qr_dqn' in the checkpoint, 'cr_dqn' now"):
    runner.run(atari_suite.ATARI, _preset('cr_dqn'), _settings(checkpoint_dir=directory),
                  make_environment=_no_environment)
  with pytest.raises(settings_lib.ConfigError, match='--num_quantiles=201'):
    runner.run(atari_suite.ATARI, _preset('qr_dqn'), _settings(checkpoint_dir=directory,
                                      num_quantiles=51), make_environment=_no_environment)


def test_agent_defaults_follow_spec_table():
  eps = 0.01 / 32
  for agent, head, loss, expected_eps, extra in [
      ('qr_dqn', 'fc', 'qr', eps, {}),
      ('cr_dqn', 'fc', 'cramer', eps * 2 / 201, {}),
      ('nc_cr_dqn', 'nc', 'cramer', eps * 2 / 201, {}),
      ('nc_qr_dqn', 'nc', 'qr', eps, {}),
      ('nc_qr_dqn', 'nc', 'qr', eps * 2 / 201,
       {'huber_param': 0.0, 'scale_grad': True}),
  ]:
    s = _resolve(_preset(agent), _settings(**extra))
    assert (s.head, s.loss) == (head, loss)
    assert math.isclose(s.optimizer_epsilon, expected_eps)
  s = _resolve(_preset('cr_dqn'), _settings(optimizer_epsilon=1e-3))
  assert s.optimizer_epsilon == 1e-3



def test_default_is_the_reference_mode_and_more_streams_are_vectorized():
  s = _resolve(_preset('cr_dqn'), _settings())
  assert (s.num_envs, s.environment_mode) == (1, 'reference')
  s = _resolve(_preset('cr_dqn'), _settings(num_envs=16))
  assert s.environment_mode == 'vector'
  s = _resolve(_preset('cr_dqn'), _settings(
      num_envs=16, environment_mode='reference'))
  assert s.environment_mode == 'reference'


def _check_csv(path, agent, num_iterations, num_envs=1):
  rows = results_csv.read_rows(path)
  assert [int(r['iteration']) for r in rows] == list(range(num_iterations + 1))
  assert list(rows[0]) == list(results_csv.COLUMNS)
  for row in rows:
    assert row['agent'] == agent and row['environment_name'] == 'pong'
    for column in results_csv.COLUMNS[3:]:
      if row['iteration'] == '0' and column.startswith('train_'):
        assert row[column] == 'nan'
      elif (column == 'train_episode_return' and num_envs > 1 and
            float(row['train_num_episodes']) == 0):
        # K > 1: no training episode ended in the phase, no partial return
        # (docs/training-streams.md).
        assert row[column] == 'nan'
      else:
        assert np.isfinite(float(row[column])), (column, row[column])
  return rows


@pytest.mark.parametrize('agent', ['qr_dqn', 'cr_dqn', 'nc_cr_dqn',
                                   'nc_qr_dqn', 'iqn'])
@pytest.mark.end_to_end
def test_agent_end_to_end_on_a_real_rom(agent, tmp_path):
  path = str(tmp_path / 'run.csv')
  argv = ['prog'] + TINY_FLAGS + [f'--results_csv_path={path}',
                                  f'--checkpoint_dir={tmp_path / "ckpt"}']
  if agent == 'nc_qr_dqn':
    argv += ['--preset=NC-QR-DQN-0']
  if agent == 'qr_dqn':  # The accelerator's learner: fused, device replay.
    argv += ['--num_fused_updates=3', '--replay_on_device']
  num_envs = {'nc_cr_dqn': 2, 'cr_dqn': 4}.get(agent, 1)
  if agent == 'nc_cr_dqn':
    argv += ['--num_envs=2', '--environment_mode=reference']
  if agent == 'cr_dqn':
    argv += ['--num_envs=4']  # auto: the vectorized mode (AtariVectorEnv).
  if agent == 'iqn':  # IQN, at few sampled levels.
    argv += ['--tau_samples_policy=4', '--tau_samples_s_tm1=4',
             '--tau_samples_s_t=4']
  flags.FLAGS.unparse_flags()
  flags.FLAGS(argv)
  try:
    importlib.import_module(f'{agent}.run_atari').main(['prog'])
  finally:
    flags.FLAGS.unparse_flags()
  rows = _check_csv(path, agent, 2, num_envs)
  assert int(rows[-1]['frame']) == 640
  # The newest checkpoint and the previous one (the fallback).
  assert sorted(os.listdir(tmp_path / 'ckpt')) == [
      'iteration_000001', 'iteration_000002', 'replay']
  assert float(rows[-1]['train_num_episodes']) >= 0


class _RecordingEnvironment(environment.BatchedEnvironment):
  """Passes an environment through; records each stream's episode returns."""

  def __init__(self, env):
    self._env = env
    self.num_envs, self.num_actions = env.num_envs, env.num_actions
    self.returns = [[] for _ in range(env.num_envs)]
    self._running = np.zeros(env.num_envs)

  def _record(self, timestep):
    first = timestep.step_type == environment.FIRST
    self._running = np.where(first, 0.0, self._running + timestep.reward)
    for k in np.flatnonzero(timestep.step_type == environment.LAST):
      self.returns[k].append(float(self._running[k]))
    return timestep

  def reset(self):
    return self._record(self._env.reset())

  def step(self, actions):
    return self._record(self._env.step(actions))

  def close(self):
    self._env.close()


def test_vectorized_evaluation_cuts_long_pong_episodes_at_the_bound(tmp_path):
  # 4,000 eval frames over 8 streams: 500 frames each, far shorter than any
  # Pong episode (21 points). Each stream plays its episode on past the
  # budget until the bound (one budget more) cuts it.
  path = str(tmp_path / 'run.csv')
  s = _settings(num_envs=8, environment_mode='vector', num_iterations=0,
                num_eval_frames=4000, num_quantiles=11, hidden_size=16,
                replay_capacity=400, min_replay_capacity_fraction=0.1,
                batch_size=8, results_csv_path=path)
  factory = build.make_environment_factory(
      atari_suite.ATARI, _resolve(_preset('cr_dqn'),
                                                   s))
  made = []

  def make(iteration, phase):
    made.append(_RecordingEnvironment(factory(iteration, phase)))
    return made[-1]

  runner.run(atari_suite.ATARI, _preset('cr_dqn'), s, make_environment=make)
  (row,) = results_csv.read_rows(path)
  # made[0] is the probe for the action count: no evaluation episode ended.
  assert all(not stream for stream in made[-1].returns)
  # Only each stream's first episode started within the budget; each was cut.
  assert int(row['eval_num_episodes']) == 8
  assert int(row['eval_num_cut_episodes']) == 8
  assert 8000 <= int(row['eval_num_frames']) <= 8000 + 8 * 4
  partial = 8 * float(row['eval_episode_return'])  # Points lost so far.
  assert partial == pytest.approx(round(partial)) and -8 * 21 < partial <= 0
  assert float(row['eval_frame_rate']) > 0


def _command(tmp_path, name):
  return [sys.executable, '-m', 'cr_dqn.run_atari'] + TINY_FLAGS[:4] + [
      '--num_iterations=2', '--num_train_frames=400', '--num_eval_frames=80',
      '--num_quantiles=11', '--hidden_size=16',
      '--target_network_update_period=160', '--seed=3',
      f'--results_csv_path={tmp_path / name}.csv',
      f'--checkpoint_dir={tmp_path / name}']


def _final_params(directory):
  with np.load(os.path.join(checkpoint.latest(directory), 'tree.npz')) as f:
    return {k: f[k] for k in f.files}


@pytest.mark.end_to_end
def test_resume_after_sigkill_equals_uninterrupted_run(tmp_path):
  # One XLA thread: else even two uninterrupted runs may differ.
  env = compile_flags.one_thread_environment(PYTHONPATH=ROOT)
  subprocess.run(_command(tmp_path, 'full'), check=True, cwd=ROOT, env=env,
                 capture_output=True, timeout=300)
  process = subprocess.Popen(_command(tmp_path, 'killed'), cwd=ROOT, env=env,
                             stdout=subprocess.DEVNULL,
                             stderr=subprocess.DEVNULL)
  directory = str(tmp_path / 'killed')
  deadline = time.time() + 240
  while time.time() < deadline:
    latest = checkpoint.latest(directory)
    if latest and latest.endswith('iteration_000001'):
      break
    assert process.poll() is None, 'run ended before iteration 1 checkpoint'
    time.sleep(0.05)
  process.send_signal(signal.SIGKILL)
  process.wait()
  assert len(results_csv.read_rows(f'{directory}.csv')) == 2
  subprocess.run(_command(tmp_path, 'killed'), check=True, cwd=ROOT, env=env,
                 capture_output=True, timeout=300)
  full = _check_csv(str(tmp_path / 'full.csv'), 'cr_dqn', 2)
  resumed = _check_csv(f'{directory}.csv', 'cr_dqn', 2)
  for a, b in zip(full, resumed):
    for column in results_csv.DETERMINISTIC_COLUMNS:
      assert a[column] == b[column], (column, a[column], b[column])
  full_params = _final_params(str(tmp_path / 'full'))
  resumed_params = _final_params(directory)
  assert full_params.keys() == resumed_params.keys()
  for key in full_params:
    np.testing.assert_array_equal(full_params[key], resumed_params[key])


def test_default_paths_are_per_run_and_resumable():
  s = _resolve(_preset('nc_cr_dqn'), dict(
      settings_lib.default_settings(atari_suite.ATARI), environment_name='pong',
      seed=3))
  assert s.results_csv_path == 'runs/nc_cr_dqn/pong/seed_3/results.csv'
  assert s.checkpoint_dir == 'runs/nc_cr_dqn/pong/seed_3/checkpoints'
  s = _resolve(_preset('cr_dqn'), dict(
      settings_lib.default_settings(atari_suite.ATARI), checkpoint_dir='',
      results_csv_path=''))
  assert (s.results_csv_path, s.checkpoint_dir) == ('', '')
