"""Tests for scripts.experiments.evidence_plan: the order, the runs' flags, the scales."""

from scripts.experiments import evidence_plan as plan


def test_order_follows_the_value_of_the_evidence():
  ids = [p.id for p in plan.pieces()]
  games = plan.MINATAR_GAMES
  assert ids[:5] == [f'minatar-cr-vs-qr1-{g}' for g in games]
  assert ids[5] == 'atari-cr-dqn-breakout'
  assert ids[6:11] == [f'minatar-others-{g}' for g in games]
  assert ids[11:] == ['atari-cr-dqn-asterix', 'atari-cr-dqn-seaquest',
                      'atari-cr-dqn-frostbite']
  assert plan.pieces()[0].presets == ('CR-DQN', 'QR-DQN-1')
  assert plan.pieces()[6].presets == ('QR-DQN-0', 'NC-CR-DQN', 'NC-QR-DQN-0')


def test_a_later_preset_adds_its_minatar_pieces_at_the_end():
  pieces = plan.pieces(['CR-DQN', 'NEW-DQN'])
  assert [p.id for p in pieces[-5:]] == [
      f'minatar-new-dqn-{g}' for g in plan.MINATAR_GAMES]
  assert len(pieces) == len(plan.pieces()) + 5


def test_pending_keeps_the_order_and_skips_what_is_done():
  pieces = plan.pieces()
  left = plan.pending(pieces, ['minatar-cr-vs-qr1-asterix'])
  assert left[0].id == 'minatar-cr-vs-qr1-breakout'
  only = plan.pending(pieces, [], ['atari-cr-dqn-breakout'])
  assert [p.id for p in only] == ['atari-cr-dqn-breakout']


def test_minatar_runs_use_the_fixed_length_and_ten_vmapped_seeds():
  assert plan.RUN_LENGTH_STEPS >= 500_000
  runs = plan.runs(plan.pieces()[0], plan.FULL)
  assert [r.label for r in runs] == ['CR-DQN', 'QR-DQN-1']
  cr, qr = runs
  assert cr.argv[0] == 'cr_dqn.run_minatar' and qr.argv[0] == 'qr_dqn.run_minatar'
  for flag in ('--loop=jitted', '--seeds=1,2,3,4,5,6,7,8,9,10',
               '--num_iterations=5', '--num_train_frames=100000',
               '--num_eval_frames=25000', '--checkpoint_dir=',
               '--exploration_epsilon_decay_frame_fraction=0.2',
               '--environment_name=asterix', '--preset=QR-DQN-1'):
    assert flag in qr.argv
  assert cr.results_dir == 'runs/minatar-cr-vs-qr1-asterix/CR-DQN'
  assert any(a.startswith('--results_csv_path=' + cr.results_dir)
             for a in cr.argv)


def test_atari_runs_keep_dqn_zoo_epsilon_in_frames_and_the_mode():
  piece = plan.pieces()[5]
  (run,) = plan.runs(piece, plan.FULL, 2, 'vector:64:u8:device')
  assert run.argv[0] == 'cr_dqn.run_atari' and run.iterations == 2
  assert '--exploration_epsilon_decay_frame_fraction=2.0' in run.argv
  for flag in ('--num_envs=64', '--num_fused_updates=8',
               '--replay_on_device', '--environment_mode=vector',
               '--num_train_frames=1000000', '--num_eval_frames=500000'):
    assert flag in run.argv


def test_mode_flags():
  assert plan.mode_flags('reference:1') == ('--environment_mode=reference',
                                            '--num_envs=1')
  assert plan.mode_flags('vector:128:u4') == (
      '--environment_mode=vector', '--num_envs=128', '--num_fused_updates=4')


def test_rehearsal_runs_one_run_per_piece_with_two_seeds():
  runs = plan.runs(plan.pieces()[6], plan.REHEARSAL)
  assert len(runs) == 1 and runs[0].seeds == (1, 2)
  assert '--num_iterations=1' in runs[0].argv
  # Two Atari streams on a CPU unless its benchmark names a mode.
  assert plan.REHEARSAL.atari_default_mode == 'vector:2'
  assert plan.FULL.atari_default_mode == plan.ATARI_DEFAULT_MODE


def test_packages_agree_with_the_registry():
  registry = plan.registry_packages()
  for name, package in plan.PACKAGES.items():
    assert registry[name] == package
  for preset in plan.STUDY_PRESETS:
    assert preset in registry
