"""Tests of the batched environment contract's helpers."""

import numpy as np
import pytest

from zoo.environments import environment


def _frames(n):
  return [np.full((2, 3), i + 1, np.uint8) for i in range(n)]


def test_stack_frames_pads_with_zeros_at_the_end_as_dqn_zoo():
  layouts = {1: [1, 0, 0, 0], 2: [1, 2, 0, 0], 3: [1, 2, 3, 0],
             4: [1, 2, 3, 4], 5: [2, 3, 4, 5]}
  for n, expected in layouts.items():
    stack = environment.stack_frames(_frames(n))
    assert stack.shape == (2, 3, 4) and stack.dtype == np.uint8
    np.testing.assert_array_equal(stack[0, 0], expected)


def test_newest_frame_index_follows_the_stack_layout():
  steps = np.arange(7)
  index = environment.newest_frame_index(steps)
  np.testing.assert_array_equal(index, [0, 1, 2, 3, 3, 3, 3])
  for step in steps:
    stack = environment.stack_frames(_frames(step + 1))
    assert stack[0, 0, index[step]] == step + 1


def test_stack_frames_needs_a_frame():
  with pytest.raises(ValueError, match='at least one frame'):
    environment.stack_frames([])


def test_check_actions_accepts_one_valid_action_per_stream():
  actions = environment.check_actions([0, 5, 2], num_envs=3, num_actions=6)
  assert actions.tolist() == [0, 5, 2]


@pytest.mark.parametrize('actions, message', [
    ([0, 1], r'shape \(3,\)'),
    ([0.0, 1.0, 2.0], 'integers'),
    ([0, 6, 1], r'\[0, 6\)'),
    ([-1, 0, 1], r'\[0, 6\)'),
])
def test_check_actions_names_the_problem(actions, message):
  with pytest.raises(ValueError, match=message):
    environment.check_actions(actions, num_envs=3, num_actions=6)


def test_context_manager_closes_the_environment():

  class Recorder(environment.BatchedEnvironment):
    num_envs, num_actions, closed = 1, 2, False

    def reset(self):
      raise NotImplementedError

    def step(self, actions):
      raise NotImplementedError

    def close(self):
      self.closed = True

  with Recorder() as env:
    assert not env.closed
  assert env.closed


def test_stream_seeds_keep_the_run_seed_for_stream_zero():
  seeds = environment.stream_seeds(7, 4)
  assert seeds[0] == 7 and len(set(seeds.tolist())) == 4
  np.testing.assert_array_equal(seeds, environment.stream_seeds(7, 4))
  with pytest.raises(ValueError, match='int32'):
    environment.stream_seeds(2**31, 1)
