"""Tests for scripts.experiments.evaluation_rule: record, save, replay."""

import math

import numpy as np
import pytest

from scripts.experiments import evaluation_rule as er
from zoo.loops import phase_accounting

# Two episodes: 3 steps earning 1 at the end, 200 steps earning 10.
EPISODES = er.Episodes(np.array([3, 200], np.int32), np.array([0, 1], np.int32),
                       np.array([3, 200], np.int32),
                       np.array([1.0, 10.0], np.float32))


def test_a_recorded_episode_round_trips_through_the_npz(tmp_path):
  pytest.importorskip('ale_py')
  recorded = er.record_scenario(er.Scenario('breakout', 'random', 1.0, 2, 7),
                                log=lambda m: None)
  assert recorded.lengths.shape == (2,) and recorded.lengths.min() > 0
  assert np.all(recorded.event_step >= 1)
  assert np.all(recorded.event_step <= recorded.lengths[recorded.event_episode])
  path = str(tmp_path / 'episodes.npz')
  er.save(path, {'a': recorded})
  loaded = er.load(path)['a']
  for want, got in zip(recorded, loaded):
    np.testing.assert_array_equal(want, got)


def test_replayed_phases_follow_the_rules_and_their_bounds():
  k, budget = 4, 4 * 4 * er.REPEATS  # Four steps of the four streams.
  whole = er.replay(EPISODES, k, budget, er.Rule('whole', True), 30, 0)
  bounded = er.replay(EPISODES, k, budget,
                      er.Rule('bounded', True, 1.0, 'partial'), 30, 0)
  drop = er.replay(EPISODES, k, budget, er.Rule('bounded', True, 1.0, 'drop'),
                   30, 0)
  step = k * er.REPEATS
  limit = budget + phase_accounting.bound(budget)
  for s in bounded + drop:  # duration: the frames stepped.
    assert s.duration < limit + step
    assert s.duration >= limit or s.num_cut == 0
  # Whole episodes: every episode that started, ended; none cut. A long
  # episode in any stream makes the phase run to its end.
  assert all(s.num_cut == 0 for s in whole)
  assert max(s.duration for s in whole) > limit
  # Every episode's return is 1 or 10; cut ones count what they earned (0).
  for s in whole:
    assert 1 <= s.episode_return <= 10
  assert sum(s.num_cut for s in bounded) > 0
  for b, d in zip(bounded, drop):
    assert b.num_episodes == d.num_episodes + b.num_cut
    assert b.num_frames == d.num_frames
  row = er.summarize('two', 5.5, k, budget, 'bounded', bounded)
  assert float(row['stepped_max']) < 2 + step / budget
  assert 0 < float(row['cut_share']) <= 1 and math.isfinite(float(row['bias']))
