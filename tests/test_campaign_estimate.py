"""Time estimates from the project's rates, then the campaign's own."""

from scripts.campaign import estimate
from scripts.campaign import run_record as run_lib


def test_frames_and_kinds():
  run = run_lib.Run('cr_dqn', 'atari', 'pong', (1,), ('--num_iterations=2',))
  assert estimate.kind(run) == 'atari'
  assert estimate.frames(run) == (2_000_000, 3 * 500_000)
  vector = run_lib.Run('cr_dqn', 'atari', 'pong', (1,), ('--num_envs=64',))
  assert estimate.kind(vector) == 'atari-vector'
  episodes = run_lib.Run('cr_dqn', 'atari', 'pong', (1,),
                         ('--protocol=atari100k',))
  assert estimate.frames(episodes) == (400_000, None)
  assert estimate.kind(episodes) == 'atari'  # No preset measured: the default.
  qr = run_lib.Run('qr_dqn', 'atari', 'pong', (1,),
                   ('--protocol=atari100k', '--preset=QR-DQN-1'))
  assert estimate.kind(qr) == 'atari100k:QR-DQN-1'
  assert estimate.MEASURED[estimate.kind(qr)].train == 171
  assert estimate.kind(run_lib.Run('cr_dqn', 'minatar', 'breakout', (1, 2),
                                   jitted=True)) == 'minatar-jitted'


def test_summary_uses_measured_rates_once_the_campaign_has_them(tmp_path):
  runs = [run_lib.Run('cr_dqn', 'atari', 'pong', (s,),
                      ('--num_iterations=1', '--num_train_frames=3600',
                       '--num_eval_frames=1800')) for s in (1, 2)]
  rate = estimate.MEASURED['atari']
  text = estimate.summary(runs, runs, str(tmp_path), 2)
  per_run = 3600 / rate.train + 2 * 1800 / rate.eval
  assert f'{per_run / 3600:,.1f} h' in text and rate.source in text
  csv = tmp_path / 'cr_dqn' / 'pong' / 'seed_1' / 'results.csv'
  csv.parent.mkdir(parents=True)
  csv.write_text('iteration,train_frame_rate,eval_frame_rate\n'
                 '0,nan,3600\n1,3600,3600\n')
  text = estimate.summary(runs, runs[1:], str(tmp_path), 1)
  assert 'this campaign, 1 iterations' in text
  assert 'Estimate for the 1 runs to launch, 1 at a time: 0.0 h' in text
  assert '(0.0 h of training' in text
  forced = estimate.summary(runs, runs, str(tmp_path), 1, train_fps=1.0)
  assert '--train_fps/--eval_fps' in forced and '2.0 h of training' in forced


def test_whole_episode_evaluation_takes_the_frames_of_complete_runs(tmp_path):
  def run(game, seed):
    return run_lib.Run('cr_dqn', 'atari', game, (seed,),
                       ('--protocol=atari100k', '--num_iterations=1'))
  def write(game, frames):
    csv = tmp_path / 'cr_dqn' / game / 'seed_1' / 'results.csv'
    csv.parent.mkdir(parents=True)
    csv.write_text('iteration,eval_num_frames\n' + ''.join(
        f'{i},{f}\n' for i, f in enumerate(frames)))
  runs = [run('pong', 1), run('krull', 1), run('freeway', 1),
          run('pong', 2), run('boxing', 1)]
  assert estimate.frames(runs[0])[1] is None
  todo = runs[2:]
  before = estimate.summary(runs, todo, str(tmp_path), 1, 10.0, 1.0)
  assert '3 run(s) evaluate whole episodes' in before
  assert '0.0 h of evaluation' in before
  write('pong', [1000, 3000])        # Complete: 4,000 frames.
  write('krull', [4000, 6000])       # Complete: 10,000 frames.
  write('freeway', [50_000])         # Cut after iteration 0: not counted.
  assert estimate.evaluation_frames(runs, str(tmp_path)) == {
      'pong': 4000, 'krull': 10_000}
  text = estimate.summary(runs, todo, str(tmp_path), 1, 10.0, 1.0)
  # Pong at its 4,000 frames; freeway and boxing at the median, 7,000.
  evaluation = (4000 + 7000 + 7000) / 1.0
  assert f'{evaluation / 3600:,.1f} h of evaluation' in text
  assert f'{3 * 40_000 / 10.0 / 3600:,.1f} h of training' in text
  assert 'evaluate whole episodes' not in text
  assert ('complete runs on 2 game(s) (median per game); 2 run(s) on other '
          'games at their median, 7,000 frames a run.') in text
