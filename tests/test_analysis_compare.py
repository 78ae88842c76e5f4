"""Tests for scripts.analysis.compare on runs and reports written here."""

import pytest

from scripts.analysis import compare
from zoo.storage import run_json
from tests.test_analysis_minatar_report import write_fake_run


def test_two_run_directories_per_iteration_and_at_the_last(tmp_path):
  for side, finals in (('python', (2.0, 4.0)), ('jitted', (3.0, 5.0, 7.0))):
    for seed, final in enumerate(finals, 1):
      write_fake_run(str(tmp_path / side / f'seed_{seed}' / 'results.csv'),
                     'cr_dqn', seed, [0.0, final])
  a = compare.load_side(f'jitted={tmp_path / "jitted"}')
  b = compare.load_side(f'python={tmp_path / "python"}')
  game = 'minatar-breakout'  # No run.json: the CSV's name.
  lines = compare.iteration_lines(a, b, game, 'eval_episode_return')
  assert lines[4] == '| 0 | 0 | 0.00 (0.00–0.00, 3) | 0.00 (0.00–0.00, 2) |'
  assert lines[5] == '| 1 | 1000 | 5.00 (3.00–7.00, 3) | 3.00 (2.00–4.00, 2) |'
  train = compare.iteration_lines(a, b, game, 'train_episode_return')
  assert train[4:6] == ['| 0 | 0 | – | – |', '| 1 | 1000 | 1.00 (1.00–1.00, '
                        '3) | 1.00 (1.00–1.00, 2) |']
  (row,) = compare.comparison_lines([a], [b], [game], 'eval_episode_return',
                                    2000)[2:]
  assert row.startswith(f'| {game} | 1 | jitted | 5.00 [')
  assert '| python | 3.00 [2.00, 4.00] (2) | 2.00 [' in row


def test_jitted_runs_against_a_reports_finals(tmp_path):
  reference = tmp_path / 'runs.csv'
  reference.write_text(
      'configuration,game,seed,state,last_iteration,final_eval_return\n'
      'CR-DQN,breakout,1,complete,2,8.0\n'
      'CR-DQN,breakout,2,complete,2,10.0\n'
      'CR-DQN,breakout,3,incomplete,1,99.0\n'
      'QR-DQN-1,breakout,1,complete,2,1.0\n')
  assert compare.report_finals(str(reference)) == {
      ('CR-DQN', 'breakout'): [8.0, 10.0], ('QR-DQN-1', 'breakout'): [1.0]}
  study = tmp_path / 'study'
  for label, seed, returns in (('CR-DQN', 1, [0.0, 1.0, 9.0]),
                               ('CR-DQN', 2, [0.0, 1.0, 9.0]),
                               ('CR-DQN', 3, [0.0, 50.0]),  # Not at 2.
                               ('CR-DQN-MQ', 1, [0.0, 1.0, 12.0]),
                               ('CR-DQN-MQ', 2, [0.0, 1.0, 12.0])):
    path = str(study / label / 'cr_dqn' / 'breakout' / f'seed_{seed}' /
               'results.csv')
    write_fake_run(path, 'cr_dqn', seed, returns)
    # The run's game is run.json's, not the CSV's minatar-breakout.
    run_json.write(path, 'cr_dqn', 'minatar',
                   {'environment_name': 'breakout', 'seed': seed})
  jitted = [compare.load_side(f'{label}={study / label}')
            for label in ('CR-DQN', 'CR-DQN-MQ')]
  python = compare.load_side(f'CR-DQN={reference}')
  lines = compare.comparison_lines(jitted, [python], ['breakout'],
                                   'eval_episode_return', 1000,
                                   num_iterations=2)
  assert lines[2] == ('| breakout | 2 | CR-DQN | 9.00 [9.00, 9.00] (2) | '
                      'CR-DQN | 9.00 [8.00, 10.00] (2) | 0.00 [-1.00, 1.00] |')
  assert lines[3] == ('| breakout | 2 | CR-DQN-MQ | 12.00 [12.00, 12.00] (2) '
                      '| CR-DQN | 9.00 [8.00, 10.00] (2) | 3.00 [2.00, 4.00] |')
  with pytest.raises(ValueError, match='IQN not in .*it holds CR-DQN, '
                     'QR-DQN-1'):
    compare.load_side(f'IQN={reference}')
  with pytest.raises(ValueError, match='run directories on both sides'):
    compare.iteration_lines(jitted[0], python, 'breakout',
                            'eval_episode_return')
