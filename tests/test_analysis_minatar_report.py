"""Tests for scripts.analysis.minatar_report with small fake run CSVs."""

import csv
import datetime
import os
import re

import numpy as np
import pytest

from scripts.analysis import minatar_report
from zoo.storage import results_csv


def write_fake_run(path, agent, seed, eval_returns, steps_per_iteration=1000,
                   game='breakout', train_rate=100.0, eval_rate=400.0):
  """Write a run CSV; eval_returns[i] is iteration i, train return = i."""
  rows = []
  for i, value in enumerate(eval_returns):
    row = dict.fromkeys(results_csv.COLUMNS, float('nan'))
    row.update(agent=agent, environment_name=f'minatar-{game}', seed=seed,
               iteration=i, frame=i * steps_per_iteration,
               eval_episode_return=value, eval_frame_rate=eval_rate)
    if i:
      row.update(train_episode_return=float(i), train_frame_rate=train_rate)
    rows.append(row)
  os.makedirs(os.path.dirname(path), exist_ok=True)
  results_csv.write_rows(path, rows)


def test_load_run_reads_curves_completeness_and_phase_time(tmp_path):
  path = str(tmp_path / 'r.csv')
  write_fake_run(path, 'cr_dqn', 1, [0.5, 2.0, 4.0, 9.0])
  run = minatar_report.load_run('CR-DQN', 'breakout', 1, path,
                                num_iterations=2, num_eval_frames=200)
  assert run.complete and run.last_iteration == 2  # Iteration 3 ignored.
  np.testing.assert_array_equal(run.steps, [0, 1000, 2000])
  assert run.final == 4.0
  assert run.mean_over_iterations == 3.0  # Iterations 1..2.
  assert run.final_train == 2.0
  # 3 evaluations of 200 steps at 400/s, 2 x 1000 training steps at 100/s.
  assert run.phase_seconds == pytest.approx(3 * 0.5 + 2 * 10.0)
  longer = minatar_report.load_run('CR-DQN', 'breakout', 1, path,
                                   num_iterations=5, num_eval_frames=200)
  assert not longer.complete
  assert minatar_report.load_run('CR-DQN', 'breakout', 1,
                                 str(tmp_path / 'none.csv'), 2, 200) is None


def test_write_report_tables_figures_and_missing_runs(tmp_path):
  root = tmp_path / 'study'
  planned = []

  def add(label, agent, seed, returns):
    path = str(root / label / f'seed_{seed}.csv')
    if returns is not None:
      write_fake_run(path, agent, seed, returns)
    planned.append((label, 'breakout', seed, path))

  add('QR-DQN-1', 'qr_dqn', 1, [0.4, 1.0, 3.0])
  add('QR-DQN-1', 'qr_dqn', 2, [0.4, 2.0, 5.0])
  add('CR-DQN', 'cr_dqn', 1, [0.4, 4.0, 8.0])
  add('CR-DQN', 'cr_dqn', 2, [0.4, 0.2, 0.1])      # Below random at the end.
  add('CR-DQN', 'cr_dqn', 3, [0.4, 50.0])          # Incomplete: left out.
  add('CR-DQN-K8', 'cr_dqn', 1, [0.4, 3.0, 7.0])
  add('CR-DQN-K8', 'cr_dqn', 2, None)              # Missing.
  out = tmp_path / 'out'
  results = {(label, game, seed): minatar_report.load_run(
      label, game, seed, path, num_iterations=2, num_eval_frames=200)
             for label, game, seed, path in planned}
  written = minatar_report.write_report(
      planned, results, ['QR-DQN-1', 'CR-DQN'], ['breakout'],
      ('CR-DQN-K8', 'breakout'), str(out), num_iterations=2,
      num_train_frames=1000, machine='fake', reps=500,
      random_results=[minatar_report.RandomReturn('breakout', [1, 2],
                                                  [0.5, 0.9], [7, 6], 500)])
  assert sorted(os.path.basename(p) for p in written) == [
      'curves.png', 'final_scores.csv', 'k_streams.png', 'report.md',
      'runs.csv']
  with open(out / 'final_scores.csv') as f:
    rows = {r['configuration']: r for r in csv.DictReader(f)}
  assert set(rows) == {'QR-DQN-1', 'CR-DQN'}
  assert rows['QR-DQN-1']['seeds_list'] == '1 2'
  assert float(rows['QR-DQN-1']['final_mean']) == pytest.approx(4.0)
  assert float(rows['QR-DQN-1']['mean_over_iterations_mean']) == (
      pytest.approx(2.75))
  assert rows['QR-DQN-1']['above_random'] == 'true'
  # CR-DQN's seeds end at 8 and 0.1: the CI reaches below random.
  assert float(rows['CR-DQN']['final_mean']) == pytest.approx(4.05)
  assert float(rows['CR-DQN']['final_ci_low']) == pytest.approx(0.1)
  assert rows['CR-DQN']['above_random'] == 'false'
  assert float(rows['CR-DQN']['random_policy']) == pytest.approx(0.7)
  with open(out / 'runs.csv') as f:
    states = [(r['configuration'], r['seed'], r['state'])
              for r in csv.DictReader(f)]
  assert states == [('QR-DQN-1', '1', 'complete'),
                    ('QR-DQN-1', '2', 'complete'),
                    ('CR-DQN', '1', 'complete'), ('CR-DQN', '2', 'complete'),
                    ('CR-DQN', '3', 'incomplete'),
                    ('CR-DQN-K8', '1', 'complete'),
                    ('CR-DQN-K8', '2', 'missing')]
  report = (out / 'report.md').read_text()
  assert '5 of 7 planned runs complete' in report
  assert '| breakout | QR-DQN-1 | 2 | 4.00 [3.00, 5.00] |' in report
  # K = 8 (one seed) against K = 1 (two seeds): 7 vs 4.05.
  assert '| final | 4.05 [0.10, 8.00] | 7.00 | 2.95 |' in report
  assert '| CR-DQN | breakout | 3 | incomplete | 1 |' in report
  assert '![curves](curves.png)' in report
  assert '| breakout | 0.70 | 0.50, 0.90 | 13 | 500 |' in report
  # Phases: 5 complete runs of 3 x 0.5 s eval + 2 x 10 s training, and the
  # incomplete one's 2 x 0.5 + 10 s: 118.5 s.
  assert '0.03 h of phases' in report and 'machine: fake' in report


def test_write_report_needs_the_random_return_of_every_game(tmp_path):
  with pytest.raises(ValueError, match='No random policy return for seaquest'):
    minatar_report.write_report(
        [], {}, ['CR-DQN'], ['breakout', 'seaquest'], None, str(tmp_path),
        num_iterations=2, num_train_frames=1000, machine='fake',
        random_results=[minatar_report.RandomReturn('breakout', [1], [0.5],
                                                    [7], 500)])


def test_study_span_from_run_logs_and_csv_writes(tmp_path):
  path = tmp_path / 'run' / 'results.csv'
  write_fake_run(str(path), 'cr_dqn', 1, [0.0])
  assert minatar_report.study_span([str(path)]) is None  # No run.log.
  (tmp_path / 'run' / 'run.log').write_text(
      '=== 2026-01-02 03:04:05 on host: python -m cr_dqn.run_minatar\n')
  os.utime(path, (0, datetime.datetime(2026, 1, 2, 5, 4, 5).timestamp()))
  start, end = minatar_report.study_span([str(path), str(tmp_path / 'no')])
  assert (end - start).total_seconds() == 7200


def test_cpu_description_names_the_cores():
  assert f'{os.cpu_count()} cores' in minatar_report.cpu_description()


def test_comparison_differences_and_normalised_iqm():
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
  text = minatar_report.comparison_markdown(
      results, ['CR-DQN', 'QR-DQN-1'], ['breakout', 'asterix'],
      {'breakout': 0.0, 'asterix': 2.0}, reps=2000)
  # Breakout: every resample of the seeds differs by exactly 4.
  assert ('| breakout | final | CR-DQN | 12.00 [12.00, 12.00] (3) | QR-DQN-1 '
          '| 8.00 [8.00, 8.00] (3) | 4.00 [4.00, 4.00] |') in text
  asterix = [l for l in text.splitlines() if l.startswith('| asterix |')][0]
  difference = asterix.split('|')[-2]
  low, high = (float(x) for x in re.findall(r'\[(.*), (.*)\]', difference)[0])
  assert difference.startswith(' -2.00 [') and -3 <= low < -2 < high <= -1
  # Normalised by random (0; 2) and the best mean (CR-DQN 12; QR-DQN-1 8):
  # QR-DQN-1 scores 8/12 x 3 and 1 x 3, always: IQM of the middle four.
  assert '| QR-DQN-1 | 3 | 0.833 [0.833, 0.833] |' in text
  # CR-DQN: 1 x 3 and (3, 4, 5) / 6, resampled over asterix's seeds.
  cr = [l for l in text.splitlines() if l.startswith('| CR-DQN |')][0]
  low, high = (float(x) for x in re.findall(r'\[(.*), (.*)\]', cr)[0])
  point = float(cr.split('|')[3].split()[0])
  assert point == pytest.approx(np.mean([4 / 6, 5 / 6, 1, 1]), abs=1e-3)
  assert 0.5 <= low <= point <= high <= 1
