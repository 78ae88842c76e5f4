"""Tests for zoo.agent.counts: the blocks and updates of a run's counts."""

import pytest

from zoo.agent import counts as counts_lib
from zoo.agent import learning


def _counts(k, repeats, learn_period, capacity, minimum):
  return counts_lib.Counts(
      num_streams=k, observation_shape=(4, 4, 1), replay_capacity=capacity,
      batch_size=1, min_replay_size=minimum, learn_period=learn_period,
      target_period=100, num_action_repeats=repeats, additional_discount=0.99,
      max_abs_reward=1.0, grad_scale=1.0,
      epsilon=learning.LinearSchedule(1.0, 0.1, 0, 10), eval_epsilon=0.0,
      num_train_frames=0, num_eval_frames=0)


def test_blocks_span_a_learn_period_or_one_step():
  cfg = _counts(k=2, repeats=4, learn_period=16, capacity=50, minimum=30)
  assert (cfg.stream_capacity, cfg.step_frames) == (25, 8)
  assert (cfg.steps_per_block, cfg.block_frames, cfg.updates_per_block) == (
      2, 16, 1)
  cfg = _counts(k=16, repeats=4, learn_period=16, capacity=800, minimum=100)
  assert (cfg.steps_per_block, cfg.block_frames, cfg.updates_per_block) == (
      1, 64, 4)


@pytest.mark.parametrize('k,repeats,learn_period,capacity,minimum', [
    (1, 1, 4, 100, 20), (8, 1, 4, 800, 100), (2, 1, 4, 50, 30),
    (3, 1, 3, 30, 7), (1, 4, 16, 100, 20), (2, 4, 16, 50, 30),
    (16, 4, 16, 800, 100),
    (4, 1, 4, 4, 8)])  # The last: the replay never holds the minimum.
def test_updates_done_counts_the_blocks_that_learn(k, repeats, learn_period,
                                                   capacity, minimum):
  cfg = _counts(k, repeats, learn_period, capacity, minimum)
  updates = 0
  for block in range(60):  # As the jitted loop's block decides, one by one.
    end_t = (block + 1) * cfg.block_frames
    # The Python loop's agent: transitions held after the block's steps.
    steps = end_t // (k * repeats)
    if k * min(steps, cfg.stream_capacity) >= minimum:
      updates += cfg.updates_per_block
    assert cfg.updates_done(end_t) == updates, block
