"""Progress of a run: a line every ~30 s within phases, measured ETAs.

Each line gives the frames done, the rate since the previous line and the
phase's and the run's ETAs (docs/running.md, "Progress lines"); on a
terminal a one-line bar on stderr is redrawn every second.
"""

import math
import sys
import time
from typing import Callable, Dict, Optional, TextIO, Tuple

from absl import logging

from zoo.loops import run_hooks


def format_duration(seconds: float) -> str:
  """Return '1h02m03s' ('?' for an unknown duration)."""
  if seconds is None or not math.isfinite(seconds):
    return '?'
  seconds = int(round(seconds))
  hours, rest = divmod(seconds, 3600)
  return f'{hours}h{rest // 60:02d}m{rest % 60:02d}s'


def eval_episodes(row: Dict) -> Tuple[str, bool]:
  """Return what a row's eval return is made of, and whether it is partial.

  E.g. ('3 episodes', False), ('16 episodes, 16 cut at the bound', True) or
  ('partial: no episode ended', True): an unfinished episode's return so far
  (K = 1) or episodes cut at the bound (zoo.loops.phase_accounting).
  """
  num_episodes = int(row['eval_num_episodes'])
  num_cut = int(row.get('eval_num_cut_episodes') or 0)
  if not num_episodes:
    return ('no episode ended' if math.isnan(row['eval_episode_return'])
            else 'partial: no episode ended'), True
  text = f'{num_episodes} episode{"" if num_episodes == 1 else "s"}'
  if num_cut:
    text += f', {num_cut} cut at the bound'
  return text, num_cut == num_episodes


class Progress(run_hooks.RunHooks):
  """Log progress lines and the per-iteration summary of a run."""

  def __init__(self, *, num_iterations: int, num_train_frames: int,
               num_eval_frames: int, interval_seconds: float = 30.0,
               clock: Callable[[], float] = time.monotonic,
               log: Callable[..., None] = logging.info,
               bar_stream: Optional[TextIO] = None, label: str = ''):
    """Set up; nothing is logged before the first phase.

    Args:
      num_iterations: the run's last iteration.
      interval_seconds: seconds between progress lines (<= 0: none).
      clock: seconds, monotonic (tests pass a fake).
      bar_stream: where to draw the bar; None: stderr if it is a terminal.
      label: put before every line ('seed 2: ' where seeds run together).
    """
    self._label = label
    self._num_iterations = num_iterations
    self._phase_frames = {'train': num_train_frames, 'eval': num_eval_frames}
    # Frames a phase to come is expected to take: its budget, until an
    # evaluation of whole episodes (which may run far past it, or end far
    # short of it) has measured its own.
    self._expected_frames = dict(self._phase_frames)
    self._interval = interval_seconds
    self._clock = clock
    self._log = log
    if bar_stream is None and sys.stderr.isatty():
      bar_stream = sys.stderr
    self._bar = bar_stream
    self._rates: Dict[str, float] = {}  # Latest measured frames/s per phase.
    self._overheads = []  # Seconds per iteration outside its phases.
    self._learner = None
    self._iteration = 0
    self._phase = None
    self._phase_start = 0.0
    self._origin = None  # (time, frames) where the rate is measured from.
    self._learning_from = None  # (time, frames) of the phase's first update.
    self._learned_before = True  # Updates ran before the phase began.
    self._phase_seconds = 0.0
    self._iteration_start = 0.0
    self._next_line = 0.0
    self._next_bar = 0.0

  def begin_run(self, start_iteration: int, learner, rows) -> None:
    self._learner = learner
    self._iteration = start_iteration
    for row in rows:  # A resumed run: the rates its last iterations measured.
      for phase in self._phase_frames:
        rate = float(row[f'{phase}_frame_rate'])
        if math.isfinite(rate) and rate > 0:
          self._rates[phase] = rate
      frames = float(row.get('eval_num_frames', math.nan))
      if math.isfinite(frames) and frames > 0:
        self._expected_frames['eval'] = frames

  def begin_iteration(self, iteration: int) -> None:
    self._iteration = iteration
    self._iteration_start = self._clock()
    self._phase_seconds = 0.0

  def begin_phase(self, iteration: int, phase: str) -> None:
    self._iteration, self._phase = iteration, phase
    self._phase_start = self._clock()
    self._next_line = self._phase_start + self._interval
    self._next_bar = self._phase_start + 1.0
    self._origin = None
    self._learning_from = None
    self._learned_before = self._learning()

  def on_step(self, frames: int, status: str = '') -> None:
    if self._interval <= 0 and self._bar is None:
      return
    now = self._clock()
    if self._origin is None:
      # Rates count from the end of the first step, which may include
      # compiling the jitted functions (tens of seconds on a busy CPU).
      self._origin = (now, frames)
    if (self._phase == 'train' and not self._learned_before and
        self._learning_from is None and self._learning()):
      # Updates began (their first compiled): steps cost what they will
      # from now on.
      self._learning_from = self._origin = (now, frames)
      self._next_line = max(self._next_line, now + self._interval)
    if self._bar is not None and now >= self._next_bar:
      self._next_bar = now + 1.0
      self._draw_bar(frames, now)
    if (self._interval > 0 and now >= self._next_line and
        math.isfinite(self._rate(frames, now))):  # A line needs a rate.
      self._next_line = now + self._interval
      self._clear_bar()
      self._log('%s', self.line(frames, now, status))
      # The next line's rate covers its own interval: a compilation (the
      # first update of a process) distorts one line only.
      self._origin = (now, frames)

  def _learning(self) -> bool:
    return self._learner is None or self._learner.num_updates > 0

  def end_phase(self, iteration: int, phase: str, stats) -> None:
    if stats.num_frames and stats.duration > 0:
      self._rates[phase] = stats.num_frames / stats.duration
    if phase == 'eval' and stats.num_frames:
      self._expected_frames['eval'] = stats.num_frames
    if phase == 'train' and self._learning_from is not None:
      since, since_frames = self._learning_from
      now = self._clock()
      if now > since and stats.num_frames > since_frames:
        self._rates[phase] = (stats.num_frames - since_frames) / (now - since)
    self._phase_seconds += stats.duration
    self._phase = None
    self._clear_bar()

  def end_iteration(self, iteration: int, row: Dict) -> None:
    self._overheads.append(
        max(self._clock() - self._iteration_start - self._phase_seconds, 0.0))
    eta = self.run_eta(next_iteration=iteration + 1)
    learner = self._learner
    episodes, partial = eval_episodes(row)
    # Suites without human reference scores (MinAtar) write NaN, and a
    # partial return is no score: say nothing.
    normalized = ('human-normalised %.3f, ' % row['normalized_return']
                  if not (math.isnan(row['normalized_return']) or partial)
                  else '')
    self._log(
        '%siteration %d/%d, frame %d: eval return %.2f (%s), train '
        'return %.2f, %sepsilon %.3f, train %.0f frames/s, eval %.0f '
        'frames/s, updates %s, run ETA %s',
        self._label, iteration, self._num_iterations, row['frame'],
        row['eval_episode_return'], episodes,
        row['train_episode_return'], normalized,
        row['train_exploration_epsilon'], row['train_frame_rate'],
        row['eval_frame_rate'],
        learner.num_updates if learner is not None else '?',
        format_duration(eta))

  def end_run(self) -> None:
    self._clear_bar()

  def run_eta(self, next_iteration: int, phase_left: float = 0.0,
              rates: Optional[Dict[str, float]] = None) -> Optional[float]:
    """Return seconds to the run's end, or None while a rate is unmeasured.

    Args:
      next_iteration: the first iteration not yet started.
      phase_left: seconds left in the iteration under way.
      rates: frames/s per phase kind; default: the latest measured.
    """
    rates = self._rates if rates is None else rates
    remaining = self._num_iterations + 1 - next_iteration
    seconds = phase_left
    if remaining <= 0:
      return seconds
    for phase, frames in self._expected_frames.items():
      if phase not in rates:
        return None
      seconds += remaining * frames / rates[phase]
    recent = self._overheads[-3:]
    return seconds + remaining * (sum(recent) / len(recent) if recent else 0)

  def line(self, frames: int, now: float, status: str = '') -> str:
    """Return the progress line of the current phase at `frames`.

    `status`: what the phase does instead of running to its frame budget
    (whole episodes, or past its spent budget); it replaces the ETA.
    """
    total = self._phase_frames[self._phase]
    rate = self._rate(frames, now)
    rates = dict(self._rates)
    phase_left = math.nan
    if math.isfinite(rate):
      rates[self._phase] = rate  # The freshest measurement of its kind.
      phase_left = max(total - frames, 0) / rate
    run_eta = None
    if math.isfinite(phase_left):
      iteration_left = phase_left
      if self._phase == 'train':  # This iteration's evaluation is still due.
        iteration_left += (self._expected_frames['eval'] / rates['eval']
                           if 'eval' in rates else math.nan)
      if math.isfinite(iteration_left):
        run_eta = self.run_eta(self._iteration + 1, iteration_left, rates)
    warming_up = self._phase == 'train' and not self._learning()
    head = (f'{self._label}iteration {self._iteration}/{self._num_iterations}'
            f' {self._phase}: ')
    if status:
      return f'{head}{frames} frames, {rate:.0f} frames/s; {status}'
    return (f'{head}{frames}/{total} frames '
            f'({100 * min(frames / total, 1):.0f}%), {rate:.0f} frames/s; '
            f'phase ETA {format_duration(phase_left)}, run ETA '
            + ('? (filling the replay: no update yet)' if warming_up
               else format_duration(run_eta)))

  def _rate(self, frames: int, now: float) -> float:
    """Return frames/s since the last line, else the first step (or NaN)."""
    start, start_frames = self._origin
    if now <= start or frames <= start_frames:
      return math.nan
    return (frames - start_frames) / (now - start)

  def _draw_bar(self, frames: int, now: float) -> None:
    total = self._phase_frames[self._phase]
    done = min(frames / total, 1.0)
    width = 30
    filled = int(done * width)
    rate = self._rate(frames, now)
    self._bar.write(f'\r{self._phase} {self._iteration}/{self._num_iterations}'
                    f' [{"#" * filled}{"." * (width - filled)}] '
                    f'{100 * done:3.0f}% {rate:.0f} frames/s\x1b[K')
    self._bar.flush()

  def _clear_bar(self) -> None:
    if self._bar is not None:
      self._bar.write('\r\x1b[K')
      self._bar.flush()
