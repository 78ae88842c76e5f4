"""Catch (bsuite style) as a BatchedEnvironment, for agent and loop tests.

A ball falls from a random column of the top row of a 5x5 grid, one row per
step; the paddle on the bottom row moves left, stays or moves right. When
the ball reaches the bottom row the episode ends with reward +1 if the
paddle is under it, else -1 (discount 0). The optimal return is 1.
Observations are [K, 5, 5, 1] uint8 (one frame, no stacking).
"""

import numpy as np

from zoo.environments import environment

SIZE = 5


class CatchBatchedEnvironment(environment.BatchedEnvironment):
  """K independent Catch streams with dm_env auto-reset semantics."""

  num_actions = 3

  def __init__(self, num_envs: int = 1, seed: int = 0):
    self.num_envs = num_envs
    self._rng = np.random.default_rng(seed)
    self._ball_row = np.zeros(num_envs, int)
    self._ball_col = np.zeros(num_envs, int)
    self._paddle = np.zeros(num_envs, int)
    self._needs_reset = np.ones(num_envs, bool)

  def _observation(self):
    obs = np.zeros((self.num_envs, SIZE, SIZE, 1), np.uint8)
    streams = np.arange(self.num_envs)
    obs[streams, self._ball_row, self._ball_col, 0] = 1
    obs[streams, SIZE - 1, self._paddle, 0] = 1
    return obs

  def _reset_streams(self, mask):
    count = int(mask.sum())
    self._ball_row[mask] = 0
    self._ball_col[mask] = self._rng.integers(0, SIZE, size=count)
    self._paddle[mask] = SIZE // 2
    self._needs_reset[mask] = False

  def reset(self):
    self._reset_streams(np.ones(self.num_envs, bool))
    k = self.num_envs
    return environment.BatchedTimeStep(
        np.full(k, environment.FIRST), np.zeros(k, np.float32),
        np.ones(k, np.float32), self._observation())

  def step(self, actions):
    actions = environment.check_actions(actions, self.num_envs,
                                        self.num_actions)
    restart = self._needs_reset.copy()
    moving = ~restart
    self._paddle = np.where(
        moving, np.clip(self._paddle + actions - 1, 0, SIZE - 1),
        self._paddle)
    self._ball_row = np.where(moving, self._ball_row + 1, self._ball_row)
    self._reset_streams(restart)
    last = moving & (self._ball_row == SIZE - 1)
    caught = self._paddle == self._ball_col
    reward = np.where(last, np.where(caught, 1.0, -1.0), 0.0)
    step_type = np.where(restart, environment.FIRST,
                         np.where(last, environment.LAST, environment.MID))
    self._needs_reset = last
    return environment.BatchedTimeStep(
        step_type.astype(np.int8), reward.astype(np.float32),
        np.where(last, 0.0, 1.0).astype(np.float32), self._observation())
