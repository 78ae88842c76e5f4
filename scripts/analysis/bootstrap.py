"""Aggregate metrics over a [runs, games] score matrix and their stratified-bootstrap CIs.

Follows rliable (Agarwal et al., 2021): scores are a matrix [num_runs, num_tasks];
a stratified bootstrap resample draws, independently for every task (game),
num_runs runs with replacement from that task's runs, and the aggregate is
recomputed on each resample; the CI is the percentile interval of those values.
Every aggregate here takes a batch of matrices [..., num_runs, num_tasks], so that
all resamples are evaluated at once in numpy.
"""

import math
from typing import Callable, Dict, NamedTuple, Sequence, Tuple

import numpy as np

Aggregate = Callable[[np.ndarray], np.ndarray]


def best_agent_summary(scores: np.ndarray) -> np.ndarray:
  """Return the mean over runs (seeds) of the median over games (the paper's summary)."""
  return np.mean(np.median(scores, axis=-1), axis=-1)


def median_of_means(scores: np.ndarray) -> np.ndarray:
  """Return the median over games of the mean over runs (rliable's aggregate_median)."""
  return np.median(np.mean(scores, axis=-2), axis=-1)


def mean_of_means(scores: np.ndarray) -> np.ndarray:
  """Return the mean over games of the mean over runs (rliable's aggregate_mean)."""
  return np.mean(scores, axis=(-2, -1))


def interquartile_mean(scores: np.ndarray) -> np.ndarray:
  """Return the 25%-trimmed mean over all runs and games (rliable's aggregate_iqm).

  Same convention as scipy.stats.trim_mean(x, 0.25, axis=None): drop
  int(0.25 * n) values at each end of the n sorted scores.
  """
  flat = scores.reshape(scores.shape[:-2] + (-1,))
  n = flat.shape[-1]
  cut = int(0.25 * n)
  return np.mean(np.sort(flat, axis=-1)[..., cut:n - cut], axis=-1)


def optimality_gap(scores: np.ndarray, threshold: float = 1.0) -> np.ndarray:
  """Return the mean over runs and games of max(0, threshold - score).

  rliable's aggregate_optimality_gap: how far the scores fall short of
  `threshold` (1: human level), with scores above it counting as `threshold`.
  """
  return np.mean(np.maximum(0.0, threshold - scores), axis=(-2, -1))


def score_distribution(scores: np.ndarray, taus: np.ndarray) -> np.ndarray:
  """Return the fraction of all runs and games with score > tau, per tau.

  rliable's run-score distribution (a performance profile): [..., len(taus)].
  """
  flat = scores.reshape(scores.shape[:-2] + (-1,))
  return np.mean(flat[..., None] > np.asarray(taus), axis=-2)


AGGREGATES: Dict[str, Aggregate] = {
    'best_agent_summary': best_agent_summary,
    'median': median_of_means,
    'iqm': interquartile_mean,
    'mean': mean_of_means,
    'optimality_gap': optimality_gap,
}


class Interval(NamedTuple):
  point: float
  lower: float
  upper: float


def _check_confidence(confidence: float) -> None:
  if not 0.0 < confidence < 1.0:
    raise ValueError(f'confidence must be in (0, 1), got {confidence}.')


def _percentile_interval(values: np.ndarray, confidence: float, axis=None
                         ) -> Tuple[np.ndarray, np.ndarray]:
  """Return the (lower, upper) percentiles of `values` at `confidence`."""
  alpha = 100.0 * (1.0 - confidence) / 2.0
  lower, upper = np.percentile(values, [alpha, 100.0 - alpha], axis=axis)
  return lower, upper


def stratified_bootstrap(scores: np.ndarray, aggregate: Aggregate,
                         reps: int = 50_000, seed: int = 0,
                         chunk_size: int = 5_000) -> np.ndarray:
  """Return the aggregate of `reps` stratified resamples of `scores` [runs, tasks].

  The resamples are drawn in chunks to bound memory; the stream of random
  numbers, and so the result, depends on `seed` and `chunk_size` only. An
  aggregate may return a vector per resample ([reps, ...] comes back).
  """
  scores = np.asarray(scores, dtype=np.float64)
  if scores.ndim != 2 or scores.size == 0:
    raise ValueError(f'scores must be a non-empty [runs, tasks] matrix, got '
                     f'shape {scores.shape}.')
  if not np.all(np.isfinite(scores)):
    raise ValueError('scores must be finite: drop or complete the runs with '
                     'missing evaluations first.')
  num_runs, num_tasks = scores.shape
  rng = np.random.default_rng(seed)
  task_index = np.arange(num_tasks)
  values = []
  for start in range(0, reps, chunk_size):
    n = min(chunk_size, reps - start)
    # Run indices [n, num_runs, num_tasks], drawn independently per cell.
    runs = rng.integers(0, num_runs, size=(n, num_runs, num_tasks))
    values.append(aggregate(scores[runs, task_index]))
  return np.concatenate(values)


def confidence_interval(scores: np.ndarray, aggregate: Aggregate,
                        reps: int = 50_000, confidence: float = 0.95,
                        seed: int = 0) -> Interval:
  """Return the point estimate and the percentile bootstrap CI of `aggregate`."""
  _check_confidence(confidence)
  point = float(aggregate(np.asarray(scores, dtype=np.float64)))
  lower, upper = _percentile_interval(
      stratified_bootstrap(scores, aggregate, reps=reps, seed=seed), confidence)
  return Interval(point, float(lower), float(upper))


def profile_band(scores: np.ndarray, taus, reps: int = 2_000,
                 confidence: float = 0.95, seed: int = 0
                 ) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
  """Return the score distribution at `taus` and its percentile bootstrap band.

  (point, lower, upper), each [len(taus)]: pointwise stratified-bootstrap
  intervals, as rliable's create_performance_profile (2,000 resamples).
  """
  _check_confidence(confidence)
  taus = np.asarray(taus, dtype=np.float64)
  point = score_distribution(np.asarray(scores, dtype=np.float64), taus)
  # Each resample compares every run with every tau: keep chunks small.
  chunk = max(1, 2_000_000 // max(1, np.size(scores) * taus.size))
  values = stratified_bootstrap(
      scores, lambda x: score_distribution(x, taus), reps=reps, seed=seed,
      chunk_size=chunk)
  return (point,) + _percentile_interval(values, confidence, axis=0)


class Cell(NamedTuple):
  """Mean over seeds of one statistic, and its bootstrap CI."""
  mean: float
  lower: float
  upper: float
  num_seeds: int


def mean_with_ci(values: Sequence[float], reps: int = 50_000,
                 confidence: float = 0.95, seed: int = 0) -> Cell:
  """Return the mean over seeds and its percentile bootstrap CI (NaN if < 2)."""
  values = np.asarray(values, np.float64)
  if values.size == 0:
    return Cell(math.nan, math.nan, math.nan, 0)
  if values.size < 2:
    return Cell(float(values[0]), math.nan, math.nan, 1)
  return Cell(*confidence_interval(values[:, None], mean_of_means, reps=reps,
                                   confidence=confidence, seed=seed),
              values.size)


def difference_ci(a: Sequence[float], b: Sequence[float], reps: int = 50_000,
                  confidence: float = 0.95, seed: int = 0) -> Cell:
  """Return mean(a) - mean(b) and its percentile bootstrap CI (NaN if < 2).

  The groups are independent (e.g. the seeds of two configurations): each
  resample draws a's values with replacement from a and b's from b.
  """
  _check_confidence(confidence)
  a, b = np.asarray(a, np.float64), np.asarray(b, np.float64)
  point = float(a.mean() - b.mean()) if a.size and b.size else math.nan
  if a.size < 2 or b.size < 2:
    return Cell(point, math.nan, math.nan, min(a.size, b.size))
  rng = np.random.default_rng(seed)
  lower, upper = _percentile_interval(
      a[rng.integers(0, a.size, (reps, a.size))].mean(-1) -
      b[rng.integers(0, b.size, (reps, b.size))].mean(-1), confidence)
  return Cell(point, float(lower), float(upper), min(a.size, b.size))


def interval_text(point: float, lower: float = math.nan,
                  upper: float = math.nan, digits: int = 2) -> str:
  """Return 'point [lower, upper]' to `digits` decimals ('point' if no CI)."""
  if math.isnan(lower):
    return f'{point:.{digits}f}'
  return f'{point:.{digits}f} [{lower:.{digits}f}, {upper:.{digits}f}]'


def cell_text(cell: Cell) -> str:
  """Return 'mean [lower, upper]' ('mean' without a CI; '–' without seeds)."""
  return interval_text(*cell[:3]) if cell.num_seeds else '–'
