"""Tests for scripts.analysis.bootstrap: aggregates and the stratified bootstrap."""

import itertools
import math

import numpy as np
import pytest
import scipy.stats

from scripts.analysis import bootstrap


def test_aggregates_match_hand_computed_values():
  # [runs=2, tasks=3]
  scores = np.array([[1.0, 4.0, 10.0],
                     [3.0, 0.0, 20.0]])
  # Per-run medians over tasks: 4 and 3 -> mean 3.5.
  assert bootstrap.best_agent_summary(scores) == pytest.approx(3.5)
  # Per-task means 2, 2, 15 -> median 2, mean 19/3.
  assert bootstrap.median_of_means(scores) == pytest.approx(2.0)
  assert bootstrap.mean_of_means(scores) == pytest.approx(19.0 / 3.0)
  # 6 sorted values 0 1 3 4 10 20, cut int(1.5)=1 each end -> mean(1, 3, 4, 10).
  assert bootstrap.interquartile_mean(scores) == pytest.approx(4.5)


def test_optimality_gap_is_the_mean_shortfall_below_the_threshold():
  scores = np.array([[0.5, 2.0, -1.0],
                     [1.0, 0.0, 0.75]])
  # Shortfalls below 1: 0.5, 0, 2, 0, 1, 0.25 -> mean 3.75 / 6.
  assert bootstrap.optimality_gap(scores) == pytest.approx(3.75 / 6)
  # rliable's form: gamma - mean(min(scores, gamma)).
  assert bootstrap.optimality_gap(scores, threshold=0.5) == pytest.approx(
      0.5 - np.mean(np.minimum(scores, 0.5)))


def test_profile_band_counts_runs_above_each_tau_and_covers_it():
  scores = np.array([[0.0, 1.0, 2.0, 3.0],
                     [0.5, 1.5, 2.5, 3.5]])
  taus = np.array([-1.0, 0.25, 1.0, 3.25, 4.0])
  point, lower, upper = bootstrap.profile_band(scores, taus, reps=500, seed=1)
  np.testing.assert_allclose(point, [1.0, 7 / 8, 5 / 8, 1 / 8, 0.0])
  assert np.all(lower <= point) and np.all(point <= upper)
  # Every resample keeps each task's values: the ends cannot move.
  assert lower[0] == upper[0] == 1.0 and lower[-1] == upper[-1] == 0.0
  assert np.all(upper[1:4] > lower[1:4])
  again = bootstrap.profile_band(scores, taus, reps=500, seed=1)
  np.testing.assert_array_equal(again[1], lower)


@pytest.mark.parametrize('shape', [(1, 1), (3, 4), (5, 57), (2, 7)])
def test_iqm_matches_scipy_trim_mean(shape):
  scores = np.random.default_rng(0).normal(size=shape)
  expected = scipy.stats.trim_mean(scores, proportiontocut=0.25, axis=None)
  assert bootstrap.interquartile_mean(scores) == pytest.approx(expected)


def test_aggregates_are_batched():
  batch = np.random.default_rng(1).normal(size=(6, 3, 5))
  for aggregate in bootstrap.AGGREGATES.values():
    batched = aggregate(batch)
    assert batched.shape == (6,)
    np.testing.assert_allclose(batched, [aggregate(m) for m in batch])


def test_resampling_is_stratified_by_task():
  # Column j holds values in [10j, 10j + 1): a resampled column must stay there.
  rng = np.random.default_rng(2)
  scores = rng.uniform(size=(4, 5)) + 10.0 * np.arange(5)
  seen_columns = []
  values = bootstrap.stratified_bootstrap(
      scores, lambda x: (seen_columns.append(x), np.zeros(x.shape[0]))[1],
      reps=300, seed=0, chunk_size=100)
  assert values.shape == (300,)
  resamples = np.concatenate(seen_columns)
  assert resamples.shape == (300, 4, 5)
  for task in range(5):
    assert np.all(np.isin(resamples[:, :, task], scores[:, task]))
  # Runs are drawn independently per task: rows mix different runs.
  mixed = [not any(np.array_equal(r, s) for s in scores) for r in resamples[:, 0]]
  assert np.mean(mixed) > 0.5


def test_bootstrap_distribution_matches_brute_force_enumeration():
  # 2 runs x 2 tasks: each of the 4 cells picks one of 2 runs, 16 equally
  # likely resamples. Compare the bootstrap frequencies of the mean with them.
  scores = np.array([[0.0, 10.0],
                     [1.0, 30.0]])
  exact = {}
  for picks in itertools.product(range(2), repeat=4):
    resample = np.array([[scores[picks[0], 0], scores[picks[1], 1]],
                         [scores[picks[2], 0], scores[picks[3], 1]]])
    value = float(bootstrap.mean_of_means(resample))
    exact[value] = exact.get(value, 0.0) + 1.0 / 16
  values = bootstrap.stratified_bootstrap(
      scores, bootstrap.mean_of_means, reps=40_000, seed=3)
  observed = {v: np.mean(np.isclose(values, v)) for v in exact}
  assert sum(observed.values()) == pytest.approx(1.0)
  for value, probability in exact.items():
    assert observed[value] == pytest.approx(probability, abs=0.01), value
  # The 95% interval of the exact distribution is its extreme support here.
  interval = bootstrap.confidence_interval(
      scores, bootstrap.mean_of_means, reps=40_000, seed=3)
  assert interval.lower == pytest.approx(min(exact))
  assert interval.upper == pytest.approx(max(exact))


def test_confidence_interval_is_seeded_and_covers_point():
  scores = np.random.default_rng(4).lognormal(size=(5, 20))
  for aggregate in bootstrap.AGGREGATES.values():
    first = bootstrap.confidence_interval(scores, aggregate, reps=2000, seed=7)
    again = bootstrap.confidence_interval(scores, aggregate, reps=2000, seed=7)
    other = bootstrap.confidence_interval(scores, aggregate, reps=2000, seed=8)
    assert first == again
    assert first != other
    assert first.lower <= first.point <= first.upper
    assert first.lower < first.upper


def test_wider_confidence_gives_wider_interval():
  scores = np.random.default_rng(5).normal(size=(5, 10))
  narrow = bootstrap.confidence_interval(
      scores, bootstrap.mean_of_means, reps=4000, confidence=0.5, seed=0)
  wide = bootstrap.confidence_interval(
      scores, bootstrap.mean_of_means, reps=4000, confidence=0.99, seed=0)
  assert wide.lower < narrow.lower < narrow.upper < wide.upper


def test_single_run_gives_degenerate_interval():
  scores = np.array([[1.0, 2.0, 5.0]])
  interval = bootstrap.confidence_interval(
      scores, bootstrap.interquartile_mean, reps=100, seed=0)
  assert interval.lower == interval.point == interval.upper


@pytest.mark.parametrize('bad', [np.zeros((0, 3)), np.zeros(4),
                                 np.array([[1.0, np.nan]])])
def test_bad_scores_are_rejected(bad):
  with pytest.raises(ValueError):
    bootstrap.stratified_bootstrap(bad, bootstrap.mean_of_means, reps=10)


def test_difference_ci_resamples_each_group_apart():
  a, b = [5.0, 6.0, 7.0], [1.0, 2.0, 3.0]
  cell = bootstrap.difference_ci(a, b, reps=4000, seed=3)
  assert cell.mean == pytest.approx(4.0) and cell.num_seeds == 3
  assert 2.0 <= cell.lower < 4.0 < cell.upper <= 6.0
  # A shift common to both groups changes nothing; the draws depend on the seed.
  shifted = bootstrap.difference_ci(np.add(a, 100.0), np.add(b, 100.0),
                                    reps=4000, seed=3)
  np.testing.assert_allclose(shifted, cell)
  # A constant b leaves only a's spread: the interval of a's mean, shifted.
  rng = np.random.default_rng(3)
  a_means = np.asarray(a)[rng.integers(0, 3, (4000, 3))].mean(-1)
  expected = np.percentile(a_means, [2.5, 97.5]) - 2.0
  alone = bootstrap.difference_ci(a, [2.0, 2.0], reps=4000, seed=3)
  np.testing.assert_allclose([alone.lower, alone.upper], expected)
  same = bootstrap.difference_ci([1.0, 2.0], [1.0, 2.0], reps=2000)
  assert same.lower < 0.0 < same.upper


def test_difference_ci_without_two_seeds_a_side_has_no_interval():
  one = bootstrap.difference_ci([5.0], [1.0, 2.0])
  assert one.mean == 3.5 and one.num_seeds == 1 and math.isnan(one.lower)
  empty = bootstrap.difference_ci([], [1.0])
  assert empty.num_seeds == 0 and math.isnan(empty.mean)
  with pytest.raises(ValueError, match='confidence'):
    bootstrap.difference_ci([1.0, 2.0], [2.0, 3.0], confidence=1.5)


def test_mean_with_ci_over_seeds():
  cell = bootstrap.mean_with_ci([1.0, 2.0, 6.0], reps=2000)
  assert cell.mean == pytest.approx(3.0) and cell.num_seeds == 3
  assert 1.0 <= cell.lower < 3.0 < cell.upper <= 6.0
  one = bootstrap.mean_with_ci([4.0])
  assert one.mean == 4.0 and math.isnan(one.lower) and math.isnan(one.upper)
  assert bootstrap.mean_with_ci([]).num_seeds == 0
