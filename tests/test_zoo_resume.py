"""Tests for zoo.loops.resume: the one checkpoint compatibility check."""

import json
import os

import pytest

from zoo.configuration import agent_registry
from zoo.storage import checkpoint
from zoo.loops import resume
from zoo.suites import atari_suite
from zoo.configuration import settings


def _settings(tmp_path, **values):
  return settings.resolve_settings(
      atari_suite.ATARI, agent_registry.default_preset('cr_dqn'),
      dict(dict(num_iterations=3, num_train_frames=400, replay_capacity=400,
                min_replay_capacity_fraction=0.1, results_csv_path='',
                checkpoint_dir=str(tmp_path)), **values))


def _save(s, config=None):
  config = s.checkpoint_config() if config is None else config
  checkpoint.save(s.checkpoint_dir, s.num_iterations,
                  {'iteration': s.num_iterations + 1, 'config': config,
                   'rows': [], 'checkpoint_dir': os.path.abspath(
                       s.checkpoint_dir),
                   'results_csv_path': (os.path.abspath(s.results_csv_path)
                                        if s.results_csv_path else '')}, {})


def test_config_differences_name_the_flags():
  diffs = resume.config_differences({'a': 1, 'b': 2}, {'a': 1, 'b': 3})
  assert diffs == ['--b=2 in the checkpoint, 3 now']
  # A setting the checkpoint lacks differs too: nothing is implied.
  assert resume.config_differences({'a': 1}, {'a': 1, 'u': 1}) == [
      '--u=None in the checkpoint, 1 now']


def test_the_checkpoint_of_the_same_settings_resumes(tmp_path):
  s = _settings(tmp_path)
  assert resume.check_resume(s) is None  # Nothing there yet.
  _save(s)
  found = resume.check_resume(s)
  assert found.path.endswith('iteration_000003') and found.meta['iteration'] == 4
  # Paths and display settings may change.
  moved = _settings(tmp_path, tensorboard_dir='', progress_interval_seconds=1)
  assert resume.check_resume(moved).path == found.path


def test_a_checkpoint_of_another_format_is_refused_naming_the_fix(tmp_path):
  s = _settings(tmp_path)
  _save(s)
  path = checkpoint.latest(s.checkpoint_dir)
  meta = checkpoint.load_meta(path)
  del meta['format']  # As every checkpoint before formats were versioned.
  with open(f'{path}/meta.json', 'w') as f:
    json.dump(meta, f)
  with pytest.raises(settings.ConfigError, match=(
      f'^The checkpoint {path} has format 0; this code reads format '
      f'{checkpoint.FORMAT} only. Add --restart to start the run over')):
    resume.check_resume(s)


def test_another_agent_or_setting_is_refused_naming_the_differences(tmp_path):
  _save(_settings(tmp_path))
  other = settings.resolve_settings(
      atari_suite.ATARI, agent_registry.presets()['QR-DQN-0'],
      dict(num_iterations=3, num_train_frames=400, replay_capacity=400,
           min_replay_capacity_fraction=0.1, results_csv_path='',
           checkpoint_dir=str(tmp_path)))
  with pytest.raises(settings.ConfigError) as error:
    resume.check_resume(other)
  message = str(error.value)
  assert message.startswith(f'The checkpoint {tmp_path}/iteration_000003 was '
                            'written by another agent or configuration: ')
  for part in ("--agent='cr_dqn' in the checkpoint, 'qr_dqn' now",
               "--huber_param=1.0 in the checkpoint, 0.0 now",
               "--loss='cramer' in the checkpoint, 'qr' now"):
    assert part in message
  assert message.endswith('Rerun with the same flags to resume, or use a new '
                          '--checkpoint_dir.')


def test_extending_keeps_the_epsilon_schedule_or_says_how(tmp_path):
  # ε decays over 0.02 x 3 x 400 = 24 frames from frame 160: long run.
  _save(_settings(tmp_path))
  with pytest.raises(settings.ConfigError, match=(
      r'add --exploration_epsilon_decay_frame_fraction=0.012 \(same 24 '
      r'frames\)')):
    resume.check_resume(_settings(tmp_path, num_iterations=5))
  extended = _settings(tmp_path, num_iterations=5,
                       exploration_epsilon_decay_frame_fraction=0.012)
  assert resume.check_resume(extended).meta['iteration'] == 4
