"""Tests for zoo.loops.progress: timed lines, ETAs from measured rates, the bar."""

import io
import math

from zoo.loops import progress
from zoo.loops import phase_accounting


class _Clock:

  def __init__(self):
    self.now = 100.0

  def __call__(self):
    return self.now


class _Agent:
  num_updates = 7


_ROW = {'frame': 0, 'eval_episode_return': 1.5, 'eval_num_episodes': 2,
        'train_episode_return': math.nan, 'normalized_return': 0.25,
        'train_exploration_epsilon': math.nan, 'train_frame_rate': math.nan,
        'eval_frame_rate': 100.0}


def _stats(frames, seconds):
  return phase_accounting.PhaseStats(0.0, 1, frames, frames / seconds, seconds)


def _progress(clock, lines, **kwargs):
  p = progress.Progress(num_iterations=3, num_train_frames=1000,
                        num_eval_frames=500, interval_seconds=30.0,
                        clock=clock, log=lambda fmt, *a: lines.append(fmt % a),
                        bar_stream=kwargs.pop('bar_stream', None), **kwargs)
  p.begin_run(0, _Agent(), [])
  return p


def _phase(p, clock, iteration, phase, frames, seconds):
  p.begin_phase(iteration, phase)
  clock.now += seconds
  p.end_phase(iteration, phase, _stats(frames, seconds))


def test_format_duration():
  assert progress.format_duration(3723.4) == '1h02m03s'
  assert progress.format_duration(None) == '?'
  assert progress.format_duration(math.nan) == '?'


def test_no_normalised_score_without_reference_scores():
  # MinAtar rows carry NaN: the line leaves the score out.
  clock, lines = _Clock(), []
  p = _progress(clock, lines)
  p.begin_iteration(0)
  _phase(p, clock, 0, 'eval', 500, 5.0)
  p.end_iteration(0, dict(_ROW, normalized_return=math.nan))
  assert lines[-1] == (
      'iteration 0/3, frame 0: eval return 1.50 (2 episodes), train return '
      'nan, epsilon nan, train nan frames/s, eval 100 frames/s, updates 7, '
      'run ETA ?')


def test_the_line_says_when_the_eval_return_is_partial_or_cut():
  clock, lines = _Clock(), []
  p = _progress(clock, lines)
  for row in (
      # K = 1: the one episode never ended; its return so far is no score.
      dict(_ROW, eval_episode_return=12.0, eval_num_episodes=0,
           eval_num_cut_episodes=0),
      # K = 16: every episode was cut at the bound.
      dict(_ROW, eval_num_episodes=16, eval_num_cut_episodes=16),
      # Some cut, some whole: the rule's estimate, a score.
      dict(_ROW, eval_num_episodes=16, eval_num_cut_episodes=3),
      dict(_ROW, eval_num_episodes=1, eval_num_cut_episodes=0)):
    p.begin_iteration(0)
    _phase(p, clock, 0, 'eval', 500, 5.0)
    p.end_iteration(0, row)
  assert [line.split(', train return')[0] for line in lines] == [
      'iteration 0/3, frame 0: eval return 12.00 (partial: no episode ended)',
      'iteration 0/3, frame 0: eval return 1.50 (16 episodes, 16 cut at the '
      'bound)',
      'iteration 0/3, frame 0: eval return 1.50 (16 episodes, 3 cut at the '
      'bound)',
      'iteration 0/3, frame 0: eval return 1.50 (1 episode)']
  assert ['human-normalised' in line for line in lines] == [
      False, False, True, True]


def test_a_line_every_interval_with_phase_and_run_etas():
  clock, lines = _Clock(), []
  p = _progress(clock, lines)
  p.begin_iteration(0)
  _phase(p, clock, 0, 'eval', 500, 5.0)  # Eval: 100 frames/s.
  clock.now += 1.0  # The checkpoint: 1 s between phases.
  p.end_iteration(0, _ROW)
  # No training phase measured yet: the run's ETA is unknown, not guessed.
  assert lines[-1] == (
      'iteration 0/3, frame 0: eval return 1.50 (2 episodes), train return '
      'nan, human-normalised 0.250, epsilon nan, train nan frames/s, eval 100 '
      'frames/s, updates 7, run ETA ?')
  p.begin_iteration(1)
  p.begin_phase(1, 'train')
  clock.now += 20.0
  p.on_step(0)  # The first step: 20 s compiling, left out of the rate.
  clock.now += 9.0
  p.on_step(90)
  assert len(lines) == 1  # Not yet 30 s.
  clock.now += 1.0
  p.on_step(100)  # 10 frames/s since the first step.
  # Phase: 900 frames at 10/s = 90 s. Run: that, this iteration's eval
  # (5 s), then 2 iterations of 100 s + 5 s + 1 s between phases.
  assert lines[-1] == ('iteration 1/3 train: 100/1000 frames (10%), 10 '
                       'frames/s; phase ETA 0h01m30s, run ETA 0h05m07s')
  clock.now += 10.0
  p.on_step(200)
  assert len(lines) == 2  # The next line comes 30 s after the last,
  clock.now += 20.0
  p.on_step(700)  # with the rate of its own 30 s: 20 frames/s.
  assert lines[-1].startswith('iteration 1/3 train: 700/1000 frames (70%), '
                              '20 frames/s; phase ETA 0h00m15s')


def test_run_eta_uses_the_latest_rates_and_gaps_between_phases():
  clock, lines = _Clock(), []
  p = _progress(clock, lines)
  for iteration, train_seconds in ((1, 100.0), (2, 50.0)):
    p.begin_iteration(iteration)
    _phase(p, clock, iteration, 'train', 1000, train_seconds)
    _phase(p, clock, iteration, 'eval', 500, 10.0)
    clock.now += 2.0
    p.end_iteration(iteration, _ROW)
  # Iteration 3 left: 1000 frames at 20/s, 500 at 50/s, 2 s between.
  assert p.run_eta(next_iteration=3) == 50.0 + 10.0 + 2.0
  assert p.run_eta(next_iteration=4, phase_left=3.0) == 3.0


def test_evaluations_to_come_take_the_frames_of_the_last_one():
  # Whole episodes: the first evaluation ran far past the 500-frame budget,
  # the next one ended short of it; the ETA follows the latest.
  clock, lines = _Clock(), []
  p = _progress(clock, lines)
  for iteration, eval_frames in ((1, 5000), (2, 200)):
    p.begin_iteration(iteration)
    _phase(p, clock, iteration, 'train', 1000, 50.0)
    _phase(p, clock, iteration, 'eval', eval_frames, eval_frames / 50.0)
    p.end_iteration(iteration, _ROW)
  assert p.run_eta(next_iteration=3) == 50.0 + 200 / 50.0
  # A resumed run reads the last evaluation's frames from its rows.
  p.begin_run(2, _Agent(), [dict(_ROW, train_frame_rate=20.0,
                                 eval_frame_rate=50.0, eval_num_frames=900)])
  assert p.run_eta(next_iteration=3) == 50.0 + 900 / 50.0


def test_a_bar_is_drawn_on_a_terminal_and_cleared_after_the_phase():
  clock, lines, bar = _Clock(), [], io.StringIO()
  p = _progress(clock, lines, bar_stream=bar)
  p.begin_iteration(1)
  p.begin_phase(1, 'train')
  p.on_step(0)
  clock.now += 1.0
  p.on_step(250)
  assert bar.getvalue() == ('\rtrain 1/3 [#######.......................]  '
                            '25% 250 frames/s\x1b[K')
  p.end_phase(1, 'train', _stats(1000, 4.0))
  assert bar.getvalue().endswith('\r\x1b[K')


def test_a_resumed_run_starts_from_the_rates_of_its_csv_rows():
  clock, lines = _Clock(), []
  p = _progress(clock, lines)
  p.begin_run(2, _Agent(), [dict(_ROW, train_frame_rate=20.0,
                                 eval_frame_rate=50.0)])
  p.begin_iteration(2)
  p.begin_phase(2, 'train')
  p.on_step(0)
  clock.now += 30.0
  p.on_step(300)
  # 70 s of this phase, then its eval at the saved 50 frames/s (10 s),
  # then iteration 3 at this phase's 10 frames/s and 50 (110 s). Without
  # the rows, no eval rate: the run's ETA would be unknown.
  assert lines[-1].endswith('phase ETA 0h01m10s, run ETA 0h03m10s')


class _Learner:
  num_updates = 0


def test_the_run_eta_waits_for_the_first_update_and_measures_from_it():
  clock, lines = _Clock(), []
  p = progress.Progress(num_iterations=3, num_train_frames=1000,
                        num_eval_frames=500, interval_seconds=30.0,
                        clock=clock, log=lambda fmt, *a: lines.append(fmt % a))
  learner = _Learner()
  p.begin_run(0, learner, [])
  p.begin_iteration(1)
  p.begin_phase(1, 'train')
  p.on_step(0)
  clock.now += 31.0
  p.on_step(620)  # Filling the replay: 20 frames/s, not what learning costs.
  assert lines[-1].endswith('run ETA ? (filling the replay: no update yet)')
  learner.num_updates = 1
  clock.now += 10.0  # The first update compiled.
  p.on_step(640)
  assert len(lines) == 1  # No line on the step that starts the rate again.
  clock.now += 36.0
  p.on_step(820)  # 5 frames/s since learning began.
  assert '820/1000 frames (82%), 5 frames/s' in lines[-1]
  assert 'filling' not in lines[-1]
  clock.now += 36.0
  p.end_phase(1, 'train', _stats(1000, 149.0))
  # The phase's rate is learning's: 360 frames in 72 s since the update.
  assert p._rates['train'] == 360 / 72.0  # pylint: disable=protected-access


def test_past_the_budget_the_line_says_so():
  clock, lines = _Clock(), []
  p = _progress(clock, lines, label='seed 2: ')
  p.begin_iteration(0)
  p.begin_phase(0, 'eval')
  p.on_step(0)
  clock.now += 31.0
  p.on_step(800, '500-frame budget spent, finishing 3 episodes in progress, '
            '300 frames past it (at most 500)')
  assert lines[-1] == (
      'seed 2: iteration 0/3 eval: 800 frames, 26 frames/s; 500-frame budget '
      'spent, finishing 3 episodes in progress, 300 frames past it (at most '
      '500)')
  p.on_step(900, '36 of 100 episodes')  # Whole episodes: no budget.
  clock.now += 31.0
  p.on_step(1000, '40 of 100 episodes')
  assert lines[-1].endswith('eval: 1000 frames, 6 frames/s; 40 of 100 '
                            'episodes')
