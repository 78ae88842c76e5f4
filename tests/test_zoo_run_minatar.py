"""Tests for zoo.run_minatar: defaults, validation, every agent end to end."""

import os
import subprocess
import sys

import numpy as np
import pytest

from zoo import experiment
from zoo import results_csv
from zoo import run_atari
from zoo import run_minatar

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
TINY = dict(replay_capacity=2000, min_replay_capacity_fraction=0.05,
            num_iterations=2, num_train_frames=300, num_eval_frames=200,
            num_quantiles=11, hidden_size=16, target_network_update_period=100,
            results_csv_path='', checkpoint_dir='')


def _settings(**overrides):
  return dict(experiment.default_settings(run_minatar.MINATAR), **overrides)


def test_defaults_are_young_and_tians_protocol_with_the_papers_agents():
  s = experiment.resolve_settings(run_minatar.MINATAR, 'cr_dqn', _settings())
  assert s['replay_capacity'] == 100_000
  assert experiment.min_replay_size(s) == 5000
  assert s['target_network_update_period'] == 1000
  assert (s['num_action_repeats'], s['num_stacked_frames']) == (1, 1)
  assert s['num_iterations'] * s['num_train_frames'] == 5_000_000
  # ε: 1 -> 0.1 over 100k steps.
  assert s['exploration_epsilon_end_value'] == 0.1
  assert (s['exploration_epsilon_decay_frame_fraction'] * s['num_iterations']
          * s['num_train_frames']) == 100_000
  assert s['environment_mode'] == 'reference'
  assert s['results_csv_path'] == (
      'runs/minatar/cr_dqn/breakout/seed_1/results.csv')
  # The agent's own choices stay the paper's.
  assert (s['head'], s['loss'], s['num_quantiles']) == ('fc', 'cramer', 201)
  # Atari's defaults are untouched.
  atari = experiment.default_settings(run_atari.ATARI)
  assert atari['replay_capacity'] == 1_000_000 and atari['learn_period'] == 16


@pytest.mark.parametrize('overrides,message', [
    ({'environment_name': 'pong'}, "Unknown MinAtar game 'pong'"),
    ({'num_stacked_frames': 4}, '--num_stacked_frames must be 1'),
    ({'num_action_repeats': 4}, '--num_action_repeats must be 1'),
    ({'environment_mode': 'vector'}, 'use --environment_mode=reference'),
])
def test_bad_settings_are_refused_before_any_work(overrides, message):
  def no_environment(*unused):
    raise AssertionError('validation must come first')
  with pytest.raises(experiment.ConfigError, match=message):
    experiment.run(run_minatar.MINATAR, 'cr_dqn', _settings(**overrides),
                   make_environment=no_environment)


@pytest.mark.parametrize('agent,extra', [
    ('qr_dqn', {}), ('cr_dqn', {'num_envs': 3}), ('nc_cr_dqn', {}),
    ('nc_qr_dqn', {'huber_param': 0.0, 'scale_grad': True})])
def test_every_agent_runs_on_minatar(agent, extra, tmp_path):
  path = str(tmp_path / 'run.csv')
  rows = experiment.run(run_minatar.MINATAR, agent, _settings(
      **dict(TINY, environment_name='asterix', results_csv_path=path,
             **extra)))
  assert [r['iteration'] for r in rows] == [0, 1, 2]
  read = results_csv.read_rows(path)
  assert {r['environment_name'] for r in read} == {'minatar-asterix'}
  assert all(np.isnan(float(r['normalized_return'])) for r in read)
  assert int(read[-1]['frame']) == 600
  assert float(read[-1]['eval_num_episodes']) >= 1
  assert np.isfinite(float(read[-1]['train_state_value']))


def test_entry_point_uses_minatar_defaults(tmp_path):
  csv_path = tmp_path / 'r.csv'
  command = [sys.executable, '-m', 'qr_dqn.run_minatar',
             '--environment_name=seaquest', '--num_iterations=1',
             '--num_train_frames=200', '--num_eval_frames=100',
             '--replay_capacity=1000', '--num_quantiles=5', '--hidden_size=8',
             f'--results_csv_path={csv_path}', '--checkpoint_dir=']
  result = subprocess.run(command, cwd=ROOT, capture_output=True, text=True,
                          timeout=300, env=dict(os.environ, PYTHONPATH=ROOT))
  assert result.returncode == 0, result.stderr[-2000:]
  assert "'learn_period': 4" in result.stderr
  assert "'suite': 'minatar'" in result.stderr
  rows = results_csv.read_rows(str(csv_path))
  assert [r['environment_name'] for r in rows] == ['minatar-seaquest'] * 2
