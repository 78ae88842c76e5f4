"""TensorBoard scalars of a run (tensorboardX; no TensorFlow needed).

Per iteration, ITERATION_SCALARS at step = the CSV's `frame`; `train/loss`
every `loss_period` frames. A resumed run purges the events written after
its checkpoint.
"""

import math
from typing import Dict

from zoo.loops import run_hooks

# CSV column -> scalar tag.
ITERATION_SCALARS = {
    'eval_episode_return': 'eval/episode_return',
    'eval_num_episodes': 'eval/num_episodes',
    'eval_frame_rate': 'eval/frame_rate',
    'normalized_return': 'eval/normalized_return',
    'train_episode_return': 'train/episode_return',
    'train_num_episodes': 'train/num_episodes',
    'train_frame_rate': 'train/frame_rate',
    'train_exploration_epsilon': 'train/exploration_epsilon',
    'train_state_value': 'train/state_value',
}
LOSS_TAG = 'train/loss'


class TensorBoardWriter(run_hooks.RunHooks):
  """Write a run's scalars to event files in `logdir`."""

  def __init__(self, logdir: str, loss_period: int):
    """Remember the directory and the frames between losses; open later."""
    self._logdir = logdir
    self._loss_period = loss_period
    self._writer = None
    self._start_iteration = 0
    self._purge_step = None
    self._learner = None
    self._phase = None
    self._next_loss_frame = 0

  def begin_run(self, start_iteration: int, learner, rows) -> None:
    self._learner = learner
    self._start_iteration = start_iteration
    # A resumed run starts after the frames of its checkpoint: hide whatever
    # a killed process logged beyond them.
    self._purge_step = learner.frame_t + 1 if start_iteration > 0 else None
    self._next_loss_frame = learner.frame_t  # The first loss, then periodic.

  def _add_scalar(self, tag: str, value: float, step: int) -> None:
    if self._writer is None:
      # Opened at the first scalar, so that a run stopped before it leaves
      # no empty event file behind.
      import tensorboardX  # pylint: disable=g-import-not-at-top
      # Event files are named by the second they open in: the suffix keeps a
      # resumed run from truncating the file of a run killed in that second.
      self._writer = tensorboardX.SummaryWriter(
          self._logdir, purge_step=self._purge_step, flush_secs=30,
          filename_suffix=f'.iteration_{self._start_iteration}')
    self._writer.add_scalar(tag, value, step)

  def begin_phase(self, iteration: int, phase: str) -> None:
    self._phase = phase

  def on_step(self, frames: int, status: str = '') -> None:
    if self._phase != 'train' or self._learner.frame_t < self._next_loss_frame:
      return
    loss = self._learner.last_loss
    if loss is None:  # Learning has not started.
      return
    # Reading the value waits for that update; the next action selection
    # would wait for it anyway.
    self._add_scalar(LOSS_TAG, float(loss), self._learner.frame_t)
    self._next_loss_frame = self._learner.frame_t + self._loss_period

  def end_iteration(self, iteration: int, row: Dict) -> None:
    for column, tag in ITERATION_SCALARS.items():
      value = float(row[column])
      if math.isfinite(value):
        self._add_scalar(tag, value, int(row['frame']))
    if self._writer is not None:
      self._writer.flush()

  def end_run(self) -> None:
    if self._writer is not None:
      self._writer.close()
      self._writer = None
