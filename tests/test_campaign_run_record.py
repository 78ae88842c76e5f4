"""A run's command, settings, folders and done rule."""

import pytest

from scripts.campaign import run_record as run_lib


def write_csv(path, iterations):
  path.parent.mkdir(parents=True, exist_ok=True)
  path.write_text('iteration,eval_episode_return\n' +
                  ''.join(f'{i},1.0\n' for i in iterations))


def test_settings_come_from_flags_then_protocol_then_suite():
  atari = run_lib.Run('cr_dqn', 'atari', 'pong', (1,))
  assert atari.num_iterations() == 200
  assert atari.setting('num_train_frames') == 1_000_000
  protocol = run_lib.Run('cr_dqn', 'atari', 'pong', (1,),
                         ('--protocol=atari100k',))
  assert protocol.num_iterations() == 10
  assert protocol.setting('num_train_frames') == 40_000
  assert protocol.setting('life_loss_ends_train_episode') is True
  shortened = run_lib.Run('cr_dqn', 'atari', 'pong', (1,),
                          ('--protocol=atari100k', '--num_iterations=3'))
  assert shortened.num_iterations() == 3
  assert run_lib.Run('cr_dqn', 'minatar', 'breakout', (1,)
                     ).num_iterations() == 50
  with pytest.raises(ValueError, match='not a run setting'):
    atari.setting('num_iteration')
  with pytest.raises(ValueError, match='unknown --protocol'):
    run_lib.Run('cr_dqn', 'atari', 'pong', (1,), ('--protocol=x',)
                ).num_iterations()


def test_done_means_every_seed_holds_every_iteration(tmp_path):
  run = run_lib.Run('cr_dqn', 'minatar', 'breakout', (1, 2),
                    ('--num_iterations=2',), 'study', jitted=True)
  root = str(tmp_path)
  assert run.seed_dirs(root) == [
      f'{root}/study/cr_dqn/breakout/seed_1',
      f'{root}/study/cr_dqn/breakout/seed_2']
  write_csv(tmp_path / 'study/cr_dqn/breakout/seed_1/results.csv', [0, 1, 2])
  write_csv(tmp_path / 'study/cr_dqn/breakout/seed_2/results.csv', [0, 1])
  assert not run.done(root) and run.iterations_done(root) == 2
  write_csv(tmp_path / 'study/cr_dqn/breakout/seed_2/results.csv', [0, 1, 2])
  assert run.done(root)
  (tmp_path / 'study/cr_dqn/breakout/seed_2/results.csv').write_text('x\n1\n')
  assert not run.done(root)  # A damaged CSV is not done.


def test_commands_of_both_loops():
  one = run_lib.Run('qr_dqn', 'atari', 'pong', (3,), ('--preset=QR-DQN-0',))
  assert one.command('/r', 'py') == [
      'py', '-m', 'qr_dqn.run_atari', '--environment_name=pong', '--seed=3',
      '--results_csv_path=/r/qr_dqn/pong/seed_3/results.csv',
      '--checkpoint_dir=/r/qr_dqn/pong/seed_3/checkpoints',
      '--preset=QR-DQN-0']
  group = run_lib.Run('cr_dqn', 'minatar', 'asterix', (1, 2), (), 'g',
                      jitted=True)
  assert group.command('/r', 'py')[2:6] == [
      'cr_dqn.run_minatar', '--loop=jitted', '--seeds=1,2',
      '--environment_name=asterix']
  assert group.home('/r') == '/r/g/cr_dqn/asterix'
  with pytest.raises(ValueError, match='unknown suite'):
    run_lib.Run('cr_dqn', 'procgen', 'coinrun', (1,))
