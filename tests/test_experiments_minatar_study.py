"""Tests for scripts.experiments.minatar_study: plan, estimate, --dry_run and --report."""

import csv
import json
import os
import re
import subprocess
import sys

import pytest

from scripts.experiments import minatar_study
from scripts.experiments import sweep
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
  # The smoothed Cramér loss and the sampled-level agents run when named,
  # not in the default plan.
  assert [(c.label, c.agent) for c in minatar_study.OPTIONAL_CONFIGS] == [
      ('CR-DQN-MQ', 'cr_dqn'), ('IQN', 'iqn'), ('CR-IQN', 'iqn')]
  with pytest.raises(ValueError, match='not a run setting'):
    minatar_study.config_settings(
        minatar_study.Config('X', 'CR-DQN', ('--nope=1',)))


def test_dry_run_prints_the_plan_and_the_estimate(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_study', f'--root_dir={tmp_path}',
       '--games=breakout', '--seeds=1,2', '--configs=CR-DQN,CR-DQN-MQ',
       '--dry_run'],
      cwd=REPO, capture_output=True, text=True, timeout=60)
  assert result.returncode == 0, result.stderr
  out = result.stdout
  assert '2 configurations x 1 games x 2 seeds + CR-DQN K=8 on breakout = 6 ' \
         'runs of 500,000 training steps; 6 to run, 2 at a time.' in out
  # Defaults: 3 waves of (5 x 100k x train ms + 6 x 25k x eval ms).
  seconds = 3 * (5e5 * minatar_study.DEFAULT_TRAIN_STEP_MS +
                 1.5e5 * minatar_study.DEFAULT_EVAL_STEP_MS) / 1e3
  assert f'Estimated time: {seconds / 3600:.1f} h' in out
  assert len(re.findall(r'^CR-DQN(-K8|-MQ)?: .* -m cr_dqn\.run_minatar ', out,
                        re.MULTILINE)) == 6
  assert '--preset=CR-DQN-MQ' in out
  assert not os.listdir(tmp_path)  # Nothing ran.


def test_bad_flags_are_refused_before_anything_runs(tmp_path):
  for bad, message in (('--games=pong', "Unknown MinAtar game 'pong'"),
                       ('--configs=DQN', 'Unknown --configs'),
                       ('--num_iterations=0', 'shorter than the ε decay')):
    result = subprocess.run(
        [sys.executable, '-m', 'scripts.experiments.minatar_study',
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
      [sys.executable, '-m', 'scripts.experiments.minatar_study', f'--root_dir={root}',
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
        [sys.executable, '-m', 'scripts.experiments.minatar_study',
         f'--root_dir={tmp_path / "study"}', '--games=breakout', '--seeds=1',
         '--configs=CR-DQN', mode, f'--output_dir={tmp_path / "out"}'],
        cwd=REPO, capture_output=True, text=True, timeout=60,
        env=without_minatar.environment(tmp_path, REPO))
    without_minatar.assert_refused(result)
    assert not (tmp_path / 'study').exists() and not (tmp_path / 'out').exists()


def test_jitted_groups_share_the_sweep_layout(tmp_path):
  common = minatar_study.study_flags(2, 100_000, 1000)
  groups = minatar_study.plan_groups(str(tmp_path), minatar_study.CONFIGS[:2],
                                     ['breakout'], [1, 2], '', common)
  assert [(g.label, g.game, g.seeds) for g in groups] == [
      ('QR-DQN-1', 'breakout', (1, 2)), ('QR-DQN-0', 'breakout', (1, 2))]
  command = groups[1].command
  assert command[2] == 'qr_dqn.run_minatar' and '--loop=jitted' in command
  assert '--seeds=1,2' in command and command[-1] == '--preset=QR-DQN-0'
  runs = minatar_study.plan(str(tmp_path), minatar_study.CONFIGS[:2],
                            ['breakout'], [1, 2], '', common)
  # The per-run plan (and so --report) names the CSVs the group writes.
  assert [s.results_csv_path for _, s in runs if _ == 'QR-DQN-0'] == [
      os.path.abspath(p) for p in groups[1].csv_paths]
  template = [c for c in command if c.startswith('--results_csv_path=')][0]
  assert template.split('=', 1)[1].format(
      agent='qr_dqn', environment_name='breakout', seed=2) == os.path.abspath(
          groups[1].csv_paths[1])


def test_comparison_differences_and_normalised_iqm():
  import numpy as np  # pylint: disable=g-import-not-at-top
  from scripts.analysis import minatar_report  # pylint: disable=g-import-not-at-top

  def result(label, game, seed, final):
    return minatar_report.RunResult(
        label, game, seed, '', True, np.arange(2), np.arange(2) * 1.0,
        np.array([0.0, final]), np.array([np.nan, 0.0]), 1.0)

  results = []
  for seed in (1, 2, 3):
    results += [result('CR-DQN', 'breakout', seed, 12.0),
                result('QR-DQN-1', 'breakout', seed, 8.0),
                result('CR-DQN', 'asterix', seed, 4.0 + seed),
                result('QR-DQN-1', 'asterix', seed, 8.0)]
  text = minatar_study.comparison_markdown(
      results, ['CR-DQN', 'QR-DQN-1'], ['breakout', 'asterix'],
      {'breakout': 0.0, 'asterix': 2.0}, reps=2000)
  # Breakout: every resample of the seeds differs by exactly 4.
  assert '| breakout | 3 | 4.00 [4.00, 4.00] |' in text
  asterix = [l for l in text.splitlines() if l.startswith('| asterix |')][0]
  low, high = (float(x) for x in re.findall(r'\[(.*), (.*)\]', asterix)[0])
  assert '| asterix | 3 | -2.00 [' in asterix and -3 <= low < -2 < high <= -1
  # Normalised by random (0; 2) and the best mean (CR-DQN 12; QR-DQN-1 8):
  # QR-DQN-1 scores 8/12 x 3 and 1 x 3, always: IQM of the middle four.
  assert '| QR-DQN-1 | 3 | 0.833 [0.833, 0.833] |' in text
  # CR-DQN: 1 x 3 and (3, 4, 5) / 6, resampled over asterix's seeds.
  cr = [l for l in text.splitlines() if l.startswith('| CR-DQN |')][0]
  low, high = (float(x) for x in re.findall(r'\[(.*), (.*)\]', cr)[0])
  point = float(cr.split('|')[3].split()[0])
  assert point == pytest.approx(np.mean([4 / 6, 5 / 6, 1, 1]), abs=1e-3)
  assert 0.5 <= low <= point <= high <= 1


def test_report_reads_the_runs_of_the_results_folder(tmp_path):
  """--evidence_dir: the newest result session's CSV of each run; a
  rehearsal's runs are not results."""
  evidence = tmp_path / 'evidence'

  def session(sid, scale, finals):
    d = evidence / 'sessions' / sid
    os.makedirs(d)
    (d / 'session.json').write_text(json.dumps({'id': sid, 'scale': scale}))
    for seed, final in enumerate(finals, 1):
      write_fake_run(str(d / 'runs' / 'minatar-cr-vs-qr1-breakout' / 'CR-DQN' /
                         'cr_dqn' / 'minatar-breakout' / f'seed_{seed}' /
                         'results.csv'), 'cr_dqn', seed, [0.4, 2.0, final],
                     steps_per_iteration=100_000)

  session('a', 'full', [5.0, 7.0])
  session('b', 'full', [6.0, 8.0])
  session('c', 'rehearsal', [100.0, 100.0])
  out = tmp_path / 'out'
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.minatar_study',
       f'--evidence_dir={evidence}', '--games=breakout', '--seeds=1,2',
       '--configs=CR-DQN', '--k_stream_game=', '--num_iterations=2',
       '--report', f'--output_dir={out}', '--bootstrap_reps=100',
       '--random_steps=2000', '--machine=test machine'],
      cwd=REPO, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  with open(out / 'final_scores.csv') as f:
    rows = list(csv.DictReader(f))
  assert [(r['configuration'], r['seeds'], r['final_mean']) for r in rows] == [
      ('CR-DQN', '2', '7')]
  assert '2 of 2 planned runs complete' in (out / 'report.md').read_text()
