"""Tests for scripts.analysis.run_data: loading runs by their content."""

import csv
import os

import numpy as np
import pytest

from scripts.analysis import run_data
from zoo.storage import run_json

RUN_COLUMNS = [
    'agent', 'environment_name', 'seed', 'iteration', 'frame',
    'eval_episode_return', 'train_episode_return', 'eval_num_episodes',
    'train_num_episodes', 'eval_frame_rate', 'train_frame_rate',
    'train_exploration_epsilon', 'train_state_value', 'normalized_return',
    'capped_normalized_return', 'human_gap']


def write_run(path, agent, game, seed, returns, frames_per_iteration=1000,
              suite=None):
  """Write a run CSV with ARCHITECTURE.md's columns; returns[i] is iteration i.

  suite: also write a run.json recording it (None: none, as older runs).
  """
  os.makedirs(os.path.dirname(path), exist_ok=True)
  if suite:
    run_json.write(path, agent, suite, {'environment_name': game,
                                        'seed': seed})
  with open(path, 'w', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=RUN_COLUMNS)
    writer.writeheader()
    for i, value in enumerate(returns):
      row = {c: 'nan' for c in RUN_COLUMNS}
      row.update(agent=agent, environment_name=game, seed=seed, iteration=i,
                 frame=i * frames_per_iteration, eval_episode_return=value)
      writer.writerow(row)


def test_read_runs_csv_groups_and_sorts_runs(tmp_path):
  path = tmp_path / 'many.csv'
  path.write_text('agent,environment_name,seed,iteration,eval_episode_return\n'
                  'a,pong,2,1,5\n'
                  'a,pong,1,0,1\n'
                  'a,pong,2,0,3\n'
                  'b,pong,1,0,nan\n')
  runs = {r.key: r for r in run_data.read_runs_csv(str(path), 'src')}
  assert set(runs) == {('src', 'a', 'pong', 2), ('src', 'a', 'pong', 1),
                       ('src', 'b', 'pong', 1)}
  run = runs[('src', 'a', 'pong', 2)]
  np.testing.assert_array_equal(run.iteration, [0, 1])
  np.testing.assert_array_equal(run.eval_return, [3.0, 5.0])
  # No frame column (as in dqn_zoo_runs.csv.gz): frame = iteration x 1M.
  np.testing.assert_array_equal(run.frame, [0.0, 1e6])
  assert np.isnan(runs[('src', 'b', 'pong', 1)].eval_return[0])
  assert run.eval_num_episodes is None and run.train_return is None
  assert (run.value_at(1), run.value_at(2)) == (5.0, None)
  assert runs[('src', 'b', 'pong', 1)].value_at(0) is None  # NaN.
  assert run.value_at(0, 'train_return') is None  # No such column.


def test_read_runs_csv_keeps_eval_episode_counts_and_train_returns(tmp_path):
  path = tmp_path / 'run.csv'
  path.write_text('agent,environment_name,seed,iteration,eval_episode_return,'
                  'eval_num_episodes,train_episode_return\n'
                  'a,pong,1,1,-20,0,-19\n'
                  'a,pong,1,0,-21,3,\n')
  (run,) = run_data.read_runs_csv(str(path), 'ours')
  np.testing.assert_array_equal(run.eval_num_episodes, [3.0, 0.0])
  np.testing.assert_array_equal(run.train_return, [np.nan, -19.0])


def test_read_runs_csv_rejects_missing_columns_and_repeats(tmp_path):
  path = tmp_path / 'bad.csv'
  path.write_text('iteration,eval_episode_return\n0,1\n')
  with pytest.raises(ValueError, match='agent'):
    run_data.read_runs_csv(str(path), 'ours')
  path.write_text('agent,environment_name,seed,iteration,eval_episode_return\n'
                  'a,pong,1,0,1\na,pong,1,0,2\n')
  with pytest.raises(ValueError, match='repeats an iteration'):
    run_data.read_runs_csv(str(path), 'ours')


def test_read_rows_checks_columns_and_damage(tmp_path):
  path = tmp_path / 'r.csv'
  path.write_text('seed,iteration,frame_rate\n1,0,5\n1,1,nan\n')
  assert run_data.read_rows(str(path), ('frame_rate',)) == [
      dict(seed='1', iteration='0', frame_rate='5'),
      dict(seed='1', iteration='1', frame_rate='nan')]
  with pytest.raises(run_data.NotRunCsvError, match=r"\['agent'"):
    run_data.read_rows(str(path))
  path.write_text('seed,iteration,frame_rate\n1,0,5\n1,1')  # Cut off.
  with pytest.raises(run_data.DamagedRunCsvError, match='line 3.*cut short'):
    run_data.read_rows(str(path), ())
  with pytest.raises(run_data.DamagedRunCsvError, match='cannot be read'):
    run_data.read_rows(str(tmp_path / 'none.csv'), ())
  # Iterations: none for a damaged CSV or none at all.
  assert run_data.iterations(str(path)) == []
  assert run_data.iterations(str(tmp_path / 'none.csv')) == []
  path.write_text('seed,iteration\n1,0\n1,1\n')
  assert run_data.iterations(str(path)) == [0, 1]


def test_is_complete():
  run = run_data.Run('s', 'a', 'pong', 1, np.arange(4), np.arange(4) * 1.0,
                     np.zeros(4), 'p')
  assert run.is_complete(3)
  assert run.is_complete(2)
  assert not run.is_complete(4)
  assert run.last_iteration == 3
  gap = run_data.Run('s', 'a', 'pong', 1, np.array([0, 1, 3]), np.zeros(3),
                     np.zeros(3), 'p')
  assert not gap.is_complete(3)


def test_load_run_dir_identifies_runs_by_content(tmp_path):
  # File names lie on purpose: the rows say what each run is.
  write_run(str(tmp_path / 'x' / 'seed_9.csv'), 'cr_dqn', 'pong', 1, [1, 2])
  write_run(str(tmp_path / 'y' / 'results.csv'), 'qr_dqn', 'breakout', 2, [3])
  (tmp_path / 'notes.csv').write_text('a,b\n1,2\n')
  runs = run_data.load_run_dir(str(tmp_path), 'mine')
  assert sorted(r.key for r in runs) == [('mine', 'cr_dqn', 'pong', 1),
                                         ('mine', 'qr_dqn', 'breakout', 2)]


def test_duplicate_runs_are_an_error_naming_both_files(tmp_path):
  write_run(str(tmp_path / 'a' / 'results.csv'), 'cr_dqn', 'pong', 1, [1])
  write_run(str(tmp_path / 'b' / 'results.csv'), 'cr_dqn', 'pong', 1, [2])
  with pytest.raises(ValueError, match='Two runs claim') as error:
    run_data.load_run_dir(str(tmp_path))
  assert 'a/results.csv' in str(error.value)
  assert 'b/results.csv' in str(error.value)


def test_load_run_dir_errors():
  with pytest.raises(ValueError, match='not a directory'):
    run_data.load_run_dir('/nonexistent/dir')


def test_load_runs_args_labels_and_checks_every_directory_first(tmp_path):
  write_run(str(tmp_path / 'a' / 'r.csv'), 'cr_dqn', 'pong', 1, [1.0])
  runs = run_data.load_runs_args([f'mine={tmp_path / "a"}', str(tmp_path)])
  assert [r.source for r in runs] == ['mine', 'ours']
  (tmp_path / 'broken').mkdir()
  (tmp_path / 'broken' / 'r.csv').write_text('agent,seed\ncr_dqn,1,2\n')
  with pytest.raises(ValueError, match='nonexistent.*not a directory'):
    run_data.load_runs_args([str(tmp_path / 'broken'), '/nonexistent/dir'])


def test_parse_runs_arg(tmp_path):
  assert run_data.parse_runs_arg('mine=/some/dir') == ('mine', '/some/dir')
  assert run_data.parse_runs_arg(str(tmp_path)) == ('ours', str(tmp_path))


def test_human_normalized():
  human_random = run_data.load_human_random()
  assert len(human_random) == 57
  random_score, human_score = human_random['pong']
  assert run_data.human_normalized('pong', random_score, human_random) == 0.0
  assert run_data.human_normalized('pong', human_score, human_random) == 1.0
  with pytest.raises(ValueError, match='Unknown game'):
    run_data.human_normalized('pongg', 1.0, human_random)


def test_load_paper_reference():
  runs = run_data.load_reference('paper')
  cr_dqn = [r for r in runs if r.agent == 'CR-DQN']
  assert len(cr_dqn) == 57 * 3
  assert all(r.is_complete(200) for r in cr_dqn)
  assert cr_dqn[0].frame[1] == 1e6
  with pytest.raises(ValueError, match='Unknown reference'):
    run_data.load_reference('atari100k')
  with pytest.raises(ValueError, match='Unknown reference agent'):
    run_data.load_with_references([], ['CR-DQN', 'nope'])


def test_a_runs_suite_is_its_run_jsons_else_the_callers(tmp_path):
  write_run(str(tmp_path / 'a' / 'results.csv'), 'cr_dqn', 'minatar-breakout',
            1, [1.0], suite='minatar')
  write_run(str(tmp_path / 'b' / 'results.csv'), 'cr_dqn', 'pong', 1, [1.0])
  runs = {r.game: r for r in run_data.load_run_dir(str(tmp_path))}
  assert (runs['minatar-breakout'].suite, runs['pong'].suite) == (
      'minatar', None)
  with pytest.raises(ValueError, match=r'1 run\(s\) have no run.json.*'
                     '--suite=atari or --suite=minatar'):
    run_data.check_suites(runs.values())
  told = {r.game: r.suite for r in run_data.load_runs_args([str(tmp_path)],
                                                            'atari')}
  assert told == {'minatar-breakout': 'minatar', 'pong': 'atari'}
  assert {r.suite for r in run_data.load_reference('paper')} == {'atari'}


def test_load_with_references_keeps_ours_first_and_the_agents_asked(tmp_path):
  write_run(str(tmp_path / 'r' / 'results.csv'), 'cr_dqn', 'pong', 1, [1.0],
            suite='atari')
  alone = run_data.load_with_references([str(tmp_path)], [''])
  assert [r.source for r in alone] == ['ours']
  runs = run_data.load_with_references([str(tmp_path)], ['CR-DQN'])
  assert runs[0].source == 'ours' and {r.agent for r in runs[1:]} == {'CR-DQN'}
  write_run(str(tmp_path / 'bare' / 'results.csv'), 'cr_dqn', 'pong', 2, [1.0])
  with pytest.raises(ValueError, match='--suite'):
    run_data.load_with_references([str(tmp_path)], [])
