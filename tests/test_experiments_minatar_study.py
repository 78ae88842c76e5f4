"""Tests for experiments.minatar_study: plan, estimate, --dry_run and --report."""

import csv
import os
import re
import subprocess
import sys

import pytest

from experiments import minatar_study
from experiments import sweep
from tests import without_minatar
from tests.test_analysis_minatar_report import write_fake_run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_plan_is_seed_by_seed_with_the_k_stream_check(tmp_path):
  common = minatar_study.study_flags(2, 100_000, 1000)
  runs = minatar_study.plan(str(tmp_path), minatar_study.CONFIGS[:2],
                            ['breakout', 'asterix'], [1, 2], 'breakout',
                            common)
  assert [(label, spec.game, spec.seed) for label, spec in runs] == [
      ('QR-DQN-1', 'breakout', 1), ('QR-DQN-0', 'breakout', 1),
      ('QR-DQN-1', 'asterix', 1), ('QR-DQN-0', 'asterix', 1),
      ('CR-DQN-K8', 'breakout', 1),
      ('QR-DQN-1', 'breakout', 2), ('QR-DQN-0', 'breakout', 2),
      ('QR-DQN-1', 'asterix', 2), ('QR-DQN-0', 'asterix', 2),
      ('CR-DQN-K8', 'breakout', 2)]
  label, spec = runs[1]
  assert spec.run_dir == str(tmp_path / 'QR-DQN-0' / 'qr_dqn' / 'breakout' /
                             'seed_1')
  assert spec.command[2] == 'qr_dqn.run_minatar'
  assert spec.command[-1] == '--preset=QR-DQN-0'
  assert spec.num_iterations == 2
  # ε decays over 100k of the run's 200k steps.
  assert '--exploration_epsilon_decay_frame_fraction=0.5' in spec.command
  assert runs[4][1].command[-1] == '--num_envs=8'


def test_a_run_shorter_than_the_epsilon_decay_is_refused():
  with pytest.raises(ValueError, match='shorter than the ε decay'):
    minatar_study.study_flags(1, 50_000, 1000)


def test_estimate_is_waves_of_runs_times_a_runs_steps():
  # 3 runs 2 at a time = 2 waves; a run: 2 x 1000 train steps at 2 ms plus
  # 3 x 500 eval steps at 1 ms = 5.5 s.
  assert minatar_study.estimate_seconds(3, 2, 2, 1000, 500, 2.0, 1.0) == (
      pytest.approx(11.0))


def test_configs_are_presets_of_the_registry():
  configs = {c.label: c for c in minatar_study.CONFIGS}
  assert list(configs) == ['QR-DQN-1', 'QR-DQN-0', 'CR-DQN', 'NC-CR-DQN',
                           'NC-QR-DQN-0']
  assert configs['QR-DQN-0'].agent == 'qr_dqn'
  assert configs['NC-QR-DQN-0'].command_flags() == ('--preset=NC-QR-DQN-0',)
  assert minatar_study.config_settings(configs['QR-DQN-1']) == {}
  assert minatar_study.K_STREAM_CONFIG.command_flags() == (
      '--preset=CR-DQN', '--num_envs=8')
  assert minatar_study.config_settings(minatar_study.K_STREAM_CONFIG) == {
      'num_envs': 8}
  with pytest.raises(ValueError, match='not a run setting'):
    minatar_study.config_settings(
        minatar_study.Config('X', 'CR-DQN', ('--nope=1',)))


def test_dry_run_prints_the_plan_and_the_estimate(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'experiments.minatar_study', f'--root_dir={tmp_path}',
       '--games=breakout', '--seeds=1,2', '--configs=CR-DQN', '--dry_run'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert result.returncode == 0, result.stderr
  out = result.stdout
  assert '1 configurations x 1 games x 2 seeds + CR-DQN K=8 on breakout = 4 ' \
         'runs of 500,000 training steps; 4 to run, 2 at a time.' in out
  # Defaults: 2 waves of (5 x 100k x train ms + 6 x 25k x eval ms).
  seconds = 2 * (5e5 * minatar_study.DEFAULT_TRAIN_STEP_MS +
                 1.5e5 * minatar_study.DEFAULT_EVAL_STEP_MS) / 1e3
  assert f'Estimated time: {seconds / 3600:.1f} h' in out
  assert len(re.findall(r'^CR-DQN(-K8)?: .* -m cr_dqn\.run_minatar ', out,
                        re.MULTILINE)) == 4
  assert not os.listdir(tmp_path)  # Nothing ran.


def test_bad_flags_are_refused_before_anything_runs(tmp_path):
  for bad, message in (('--games=pong', "Unknown MinAtar game 'pong'"),
                       ('--configs=DQN', 'Unknown --configs'),
                       ('--num_iterations=0', 'shorter than the ε decay')):
    result = subprocess.run(
        [sys.executable, '-m', 'experiments.minatar_study',
         f'--root_dir={tmp_path}', bad], cwd=REPO, capture_output=True,
        text=True, timeout=60)
    assert result.returncode != 0 and message in result.stderr, bad


def test_report_of_a_partial_study(tmp_path):
  """One complete run, one incomplete run; the rest missing."""
  root = tmp_path / 'study'
  complete = sweep.run_dir_of(str(root / 'CR-DQN'), 'cr_dqn', 'breakout', 1)
  write_fake_run(os.path.join(complete, 'results.csv'), 'cr_dqn', 1,
                 [0.4, 2.0, 5.0], steps_per_iteration=100_000)
  partial = sweep.run_dir_of(str(root / 'QR-DQN-1'), 'qr_dqn', 'breakout', 1)
  write_fake_run(os.path.join(partial, 'results.csv'), 'qr_dqn', 1, [0.4, 1.0],
                 steps_per_iteration=100_000)
  out = tmp_path / 'out'
  result = subprocess.run(
      [sys.executable, '-m', 'experiments.minatar_study', f'--root_dir={root}',
       '--games=breakout', '--seeds=1', '--configs=QR-DQN-1,CR-DQN',
       '--num_iterations=2', '--report', f'--output_dir={out}',
       '--bootstrap_reps=100', '--random_steps=2000',
       '--machine=test machine'],
      cwd=REPO, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  with open(out / 'final_scores.csv') as f:
    rows = list(csv.DictReader(f))
  assert [(r['configuration'], r['final_mean']) for r in rows] == [
      ('CR-DQN', '5')]
  report = (out / 'report.md').read_text()
  assert '1 of 3 planned runs complete' in report
  assert '| QR-DQN-1 | breakout | 1 | incomplete | 1 |' in report
  assert '| CR-DQN-K8 | breakout | 1 | missing |  |' in report
  assert 'machine: test machine' in report
  assert os.path.getsize(out / 'curves.png') > 5000


def test_running_or_reporting_without_minatar_says_how_to_install_it(tmp_path):
  for mode in ('--report', '--parallel=1'):
    result = subprocess.run(
        [sys.executable, '-m', 'experiments.minatar_study',
         f'--root_dir={tmp_path / "study"}', '--games=breakout', '--seeds=1',
         '--configs=CR-DQN', mode, f'--output_dir={tmp_path / "out"}'],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env=without_minatar.environment(tmp_path, REPO))
    without_minatar.assert_refused(result)
    assert not (tmp_path / 'study').exists() and not (tmp_path / 'out').exists()
