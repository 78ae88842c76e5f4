"""Tests for scripts.analysis.compare_jitted_minatar."""

import os

from scripts.analysis import compare_jitted_minatar
from tests.test_analysis_minatar_report import write_fake_run


def test_reference_and_jitted_finals_side_by_side(tmp_path):
  reference = tmp_path / 'runs.csv'
  reference.write_text(
      'configuration,game,seed,state,last_iteration,final_eval_return\n'
      'CR-DQN,breakout,1,complete,2,8.0\n'
      'CR-DQN,breakout,2,complete,2,10.0\n'
      'CR-DQN,breakout,3,incomplete,1,99.0\n')
  for seed, final in ((1, 9.0), (2, 9.0)):
    write_fake_run(str(tmp_path / 'study' / 'CR-DQN' / 'cr_dqn' / 'breakout' /
                       f'seed_{seed}' / 'results.csv'), 'cr_dqn', seed,
                   [0.0, 1.0, final])
  # Incomplete jitted run: not counted.
  write_fake_run(str(tmp_path / 'study' / 'CR-DQN' / 'cr_dqn' / 'breakout' /
                     'seed_3' / 'results.csv'), 'cr_dqn', 3, [0.0, 50.0])
  finals = compare_jitted_minatar.reference_finals(str(reference))
  assert finals == {('CR-DQN', 'breakout'): [8.0, 10.0]}
  lines = compare_jitted_minatar.comparison_lines(
      finals, str(tmp_path / 'study'), ['CR-DQN'], ['breakout'], 2, 1000)
  assert lines[2].startswith('| breakout | CR-DQN | 9.00 [8.00, 10.00] (2) | '
                             '9.00 [9.00, 9.00] (2) | 0.00 [-1.00, 1.00] |')
  assert os.path.exists(reference)
  # Another configuration against the reference's CR-DQN.
  for seed in (1, 2):
    write_fake_run(str(tmp_path / 'study' / 'CR-DQN-MQ' / 'cr_dqn' /
                       'breakout' / f'seed_{seed}' / 'results.csv'), 'cr_dqn',
                   seed, [0.0, 1.0, 12.0])
  lines = compare_jitted_minatar.comparison_lines(
      finals, str(tmp_path / 'study'), ['CR-DQN-MQ'], ['breakout'], 2, 1000,
      against=['CR-DQN'])
  assert lines[2].startswith('| breakout | CR-DQN-MQ vs CR-DQN | 9.00 [8.00, '
                             '10.00] (2) | 12.00 [12.00, 12.00] (2) | '
                             '3.00 [2.00, 4.00] |')
