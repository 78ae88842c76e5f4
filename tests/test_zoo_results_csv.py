"""Tests for zoo.storage.results_csv."""

import math
import os

import numpy as np

from tests import csv_check
from zoo.storage import results_csv
from zoo.loops import phase_accounting


def _row(iteration, trained, agent='cr_dqn'):
  stats = phase_accounting.PhaseStats(episode_return=3.0, num_episodes=2,
                                      num_frames=100, frame_rate=50.0,
                                      duration=2.0)
  return results_csv.make_row(
      agent=agent, environment_name='pong', seed=1, iteration=iteration,
      frame=iteration * 100, eval_stats=stats,
      train_stats=stats if trained else None, train_exploration_epsilon=0.5,
      train_state_value=0.25, normalized_return=1.5)


def test_iteration_zero_has_nan_train_columns_and_capped_scores():
  row = _row(0, trained=False)
  for column in ('train_episode_return', 'train_num_episodes',
                 'train_frame_rate', 'train_exploration_epsilon',
                 'train_state_value'):
    assert math.isnan(row[column])
  assert row['capped_normalized_return'] == 1.0 and row['human_gap'] == 0.0
  assert row['eval_episode_return'] == 3.0


def test_write_rows_is_atomic_and_has_the_contract_columns(tmp_path):
  path = str(tmp_path / 'sub' / 'run.csv')
  results_csv.write_rows(path, [_row(0, False), _row(1, True)])
  rows = results_csv.read_rows(path)
  assert list(rows[0]) == list(results_csv.COLUMNS)
  assert [r['iteration'] for r in rows] == ['0', '1']
  assert float(rows[1]['train_state_value']) == 0.25
  results_csv.write_rows(path, [_row(0, False)])  # Rewrites, no append.
  assert len(results_csv.read_rows(path)) == 1
  assert os.listdir(tmp_path / 'sub') == ['run.csv']  # No temp left over.


def test_written_csv_parses_back_to_its_header(tmp_path):
  path = str(tmp_path / 'run.csv')
  agent = 'a, "b"'  # Commas and quotes must survive.
  results_csv.write_rows(path, [_row(0, False, agent), _row(1, True, agent)])
  rows = csv_check.read_back_file(path)
  assert list(rows[0]) == list(results_csv.COLUMNS)
  assert [r['agent'] for r in rows] == [agent, agent]


def test_the_csv_records_the_frames_evaluated_past_the_budget(tmp_path):
  # A whole-episode evaluation whose 4 streams never end an episode: the
  # phase stops at its bound and the row says how many frames it evaluated.
  budget, k, repeats = 1000, 4, 4
  tally = phase_accounting.start(np.zeros(k))
  step_type = np.zeros(k, np.int8)  # FIRST, then MID forever.
  while True:
    tally = phase_accounting.count(tally, step_type, np.ones(k), budget,
                                   repeats)
    if phase_accounting.is_over(tally, budget, True):
      break
    step_type = np.ones(k, np.int8)
  stats = phase_accounting.phase_stats(tally, 1.0)
  assert budget < stats.num_frames <= budget + phase_accounting.bound(budget)
  row = results_csv.make_row(
      agent='cr_dqn', environment_name='breakout', seed=1, iteration=0,
      frame=0, eval_stats=stats, train_stats=None,
      train_exploration_epsilon=0.5, train_state_value=0.0,
      normalized_return=0.0)
  path = str(tmp_path / 'run.csv')
  results_csv.write_rows(path, [row])
  written = results_csv.read_rows(path)[0]
  assert int(written['eval_num_frames']) == stats.num_frames == 2000
  assert int(written['eval_num_cut_episodes']) == k
  assert int(written['eval_num_episodes']) == k


def test_rows_written_before_the_evaluated_frames_columns_still_write(
    tmp_path):
  old = _row(0, False)
  for column in results_csv.LATER_COLUMNS:
    del old[column]
  path = str(tmp_path / 'run.csv')
  results_csv.write_rows(path, [old, _row(1, True)])
  rows = results_csv.read_rows(path)
  assert [r['eval_num_frames'] for r in rows] == ['', '100']


def test_a_cut_off_or_damaged_row_is_found_with_its_line(tmp_path):
  path = str(tmp_path / 'run.csv')
  results_csv.write_rows(path, [_row(i, i > 0) for i in range(3)])
  assert results_csv.damage(path) is None
  assert results_csv.damage(str(tmp_path / 'none.csv')) is None
  with open(path) as f:
    text = f.read()
  # Cut inside the last row: fewer fields, on line 4 (the header is line 1).
  with open(path, 'w') as f:
    f.write(text[:-30])
  found = results_csv.damage(path)
  assert found.line == 4 and found.reason.endswith(
      f' fields where the header has {len(results_csv.COLUMNS)}')
  # Cut inside the last field: every field is there, but no line end.
  with open(path, 'w') as f:
    f.write(text.rstrip('\r\n')[:-1])
  assert str(results_csv.damage(path)) == (
      f'{path}, line 4: the file ends inside this row (cut off)')
  # A row whose iteration is not an integer.
  with open(path, 'w') as f:
    f.write(text.replace('pong,1,1,', 'pong,1,1.5,'))
  assert results_csv.damage(path).reason == (
      "its iteration '1.5' is not an integer")
  assert results_csv.damage(path).line == 3
