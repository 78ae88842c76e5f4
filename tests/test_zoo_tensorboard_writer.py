"""Tests for zoo.loops.tensorboard_writer: event files read back, resume purge."""

import math
import os

import numpy as np

from tests import tb_events
from zoo.storage import results_csv
from zoo.loops import tensorboard_writer


class _FakeAgent:
  """What the writer reads: the frame counter and the latest loss."""

  def __init__(self, frame_t=0):
    self.frame_t = frame_t
    self.last_loss = None


def _row(iteration, frame):
  row = {c: float(iteration) + 0.5 for c in results_csv.COLUMNS}
  row['frame'] = frame
  if iteration == 0:
    for column in row:
      if column.startswith('train_'):
        row[column] = math.nan
  return row


def _train(writer, agent, iteration, frames, losses_from):
  writer.begin_iteration(iteration)
  writer.begin_phase(iteration, 'train')
  for _ in range(frames // 16):
    agent.frame_t += 16
    if agent.frame_t >= losses_from:
      agent.last_loss = np.float32(agent.frame_t / 1000)
    writer.on_step(0)
  writer.begin_phase(iteration, 'eval')
  writer.on_step(0)  # No loss from evaluation phases.


def test_iteration_scalars_and_periodic_loss_are_read_back(tmp_path):
  agent = _FakeAgent()
  writer = tensorboard_writer.TensorBoardWriter(str(tmp_path), loss_period=100)
  writer.begin_run(0, agent, [])
  writer.end_iteration(0, _row(0, 0))
  _train(writer, agent, 1, 400, losses_from=160)  # No loss before learning.
  writer.end_iteration(1, _row(1, 400))
  writer.end_run()
  scalars = tb_events.read_scalars(str(tmp_path))
  assert set(scalars) == set(tensorboard_writer.ITERATION_SCALARS.values()) | {
      tensorboard_writer.LOSS_TAG}
  assert scalars['eval/episode_return'] == [(0, 0.5), (400, 1.5)]
  assert scalars['train/episode_return'] == [(400, 1.5)]  # NaN skipped.
  # From the first loss (frame 160), then 100 frames or more apart.
  steps = [s for s, _ in scalars['train/loss']]
  assert steps == [160, 272, 384]
  assert scalars['train/loss'][0][1] == np.float32(0.16)


def test_a_resumed_run_hides_what_a_killed_process_wrote_after_its_checkpoint(
    tmp_path):
  agent = _FakeAgent()
  first = tensorboard_writer.TensorBoardWriter(str(tmp_path), loss_period=64)
  first.begin_run(0, agent, [])
  first.end_iteration(0, _row(0, 0))
  _train(first, agent, 1, 400, losses_from=0)
  first.end_iteration(1, _row(1, 400))
  _train(first, agent, 2, 208, losses_from=0)  # Killed in iteration 2.
  first.end_run()
  resumed_agent = _FakeAgent(frame_t=400)  # Restored from iteration 1.
  second = tensorboard_writer.TensorBoardWriter(str(tmp_path), loss_period=64)
  second.begin_run(2, resumed_agent, [])
  _train(second, resumed_agent, 2, 400, losses_from=0)
  second.end_iteration(2, _row(2, 800))
  second.end_run()
  scalars = tb_events.read_scalars(str(tmp_path))
  steps = [s for s, _ in scalars['train/loss']]
  # Steps 416, 480, 544, 608 were written by both processes: they show once.
  assert steps == list(range(16, 401, 64)) + list(range(416, 801, 64))
  assert [s for s, _ in scalars['eval/episode_return']] == [0, 400, 800]


def test_a_run_stopped_before_its_first_scalar_leaves_no_event_file(tmp_path):
  writer = tensorboard_writer.TensorBoardWriter(str(tmp_path / 'tb'), 64)
  writer.begin_run(0, _FakeAgent(), [])
  writer.begin_iteration(0)
  writer.begin_phase(0, 'eval')
  writer.on_step(0)
  writer.end_run()  # As when interrupted during set-up or iteration 0.
  assert not (tmp_path / 'tb').exists() or not os.listdir(tmp_path / 'tb')
