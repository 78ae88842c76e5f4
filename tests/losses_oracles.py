"""Independent float64 numpy oracles for the losses tests (not a test module)."""

import numpy as np


def staircase_cdf(atoms, weights, z):
  """Return Σ_i w_i 1[atom_i <= z] at each z (right-continuous CDF)."""
  atoms, weights = np.asarray(atoms, np.float64), np.asarray(weights, np.float64)
  order = np.argsort(atoms, kind='stable')
  cumulative = np.concatenate([[0.0], np.cumsum(weights[order])])
  return cumulative[np.searchsorted(atoms[order], np.asarray(z), side='right')]


def cramer_piecewise(source, target, source_weights=None, target_weights=None):
  """Return ∫(F − G)² by exact integration between the sorted breakpoints."""
  source = np.asarray(source, np.float64)
  target = np.asarray(target, np.float64)
  if source_weights is None:
    source_weights = np.full(source.shape, 1.0 / source.size)
  if target_weights is None:
    target_weights = np.full(target.shape, 1.0 / target.size)
  z = np.unique(np.concatenate([source, target]))
  gap = (staircase_cdf(source, source_weights, z[:-1]) -
         staircase_cdf(target, target_weights, z[:-1]))
  return float(np.sum(gap**2 * np.diff(z)))


def wasserstein1_piecewise(source, target):
  """Return ∫|F − G| by exact integration between the sorted breakpoints."""
  source = np.asarray(source, np.float64)
  target = np.asarray(target, np.float64)
  z = np.unique(np.concatenate([source, target]))
  gap = (staircase_cdf(source, np.full(source.shape, 1 / source.size), z[:-1]) -
         staircase_cdf(target, np.full(target.shape, 1 / target.size), z[:-1]))
  return float(np.sum(np.abs(gap) * np.diff(z)))


def cramer_sorted_closed_form(source, target):
  """Return the paper's closed form; needs sorted source and target, N = M."""
  theta = np.asarray(source, np.float64)
  theta_bar = np.asarray(target, np.float64)
  n = theta.size
  total = 0.0
  for i in range(n):
    total += abs(theta_bar[i] - theta[i])
    for j in range(n):
      u = theta_bar[j] - theta[i]
      below = u < 0
      if j > i:
        total += 2 * below * abs(u)
      elif j < i:
        total += 2 * (1 - below) * abs(u)
  return total / n**2


def quantile_regression_numpy(source, target, huber_param=0.0):
  """Return the paper's QR loss (sum over source, mean over target)."""
  source = np.asarray(source, np.float64)
  target = np.asarray(target, np.float64)
  n = source.size
  tau = (2 * np.arange(1, n + 1) - 1) / (2 * n)
  u = target[None, :] - source[:, None]
  weight = np.abs(tau[:, None] - (u < 0))
  if huber_param > 0:
    a = np.abs(u)
    penalty = np.where(a <= huber_param, 0.5 * u**2,
                       huber_param * (a - 0.5 * huber_param))
  else:
    penalty = np.abs(u)
  return float(np.sum(np.mean(weight * penalty, axis=1)))


def random_atoms(rng, kind, n):
  """Return n float64 atoms of a kind of input the losses must handle."""
  if kind == 'normal':
    return rng.normal(size=n)
  if kind == 'grid':  # Many ties, within and across distributions.
    return rng.integers(-3, 4, size=n).astype(np.float64)
  if kind == 'tiny':
    return 1e-7 * rng.normal(size=n)
  if kind == 'huge':
    return 1e7 * rng.normal(size=n)
  if kind == 'offset':  # Small spread far from 0: cancellation hazard.
    return 1e4 + rng.normal(size=n)
  if kind == 'constant':
    return np.full(n, rng.normal())
  raise ValueError(kind)


KINDS = ('normal', 'grid', 'tiny', 'huge', 'offset', 'constant')


def central_differences(fn, x, eps):
  """Return the central finite-difference gradient of fn at x (1-D)."""
  grad = np.zeros_like(x)
  for i in range(x.size):
    step = np.zeros_like(x)
    step[i] = eps
    grad[i] = (fn(x + step) - fn(x - step)) / (2 * eps)
  return grad
