"""Figure of the synthetic experiment: every trial's learned CDF over the target."""

import io
import math

import matplotlib

matplotlib.use('Agg')
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
from matplotlib import collections as mcollections  # pylint: disable=g-import-not-at-top
from matplotlib import ticker  # pylint: disable=g-import-not-at-top
import numpy as np  # pylint: disable=g-import-not-at-top


def staircase_cdf_xy(atoms, x_min: float, x_max: float):
  """Return the (x, y) polyline of the CDF of the staircase with these atoms."""
  atoms = np.sort(np.asarray(atoms, np.float64))
  n = len(atoms)
  levels = np.arange(n + 1) / n
  x = np.concatenate([[min(x_min, atoms[0])], np.repeat(atoms, 2),
                      [max(x_max, atoms[-1])]])
  y = np.repeat(levels, 2)
  return x, y


def figure_png(results, mixture, dpi: int = 80) -> bytes:
  """Return a PNG with one panel per configuration's trials."""
  span = mixture.locations[-1] - mixture.locations[0]
  x_min = mixture.locations[0] - 0.25 * span
  x_max = mixture.locations[-1] + 0.25 * span
  num_columns = min(4, len(results))
  num_rows = math.ceil(len(results) / num_columns)
  fig, axes = plt.subplots(num_rows, num_columns, squeeze=False, sharex=True,
                           sharey=True,
                           figsize=(3.4 * num_columns, 2.8 * num_rows))
  for ax, result in zip(axes.flat, results):
    lines = [np.stack(staircase_cdf_xy(a, x_min, x_max), -1)
             for a in result.atoms]
    ax.add_collection(mcollections.LineCollection(
        lines, colors='tab:blue', linewidths=0.6, alpha=0.25))
    ax.plot(np.concatenate([[x_min], np.repeat(mixture.locations, 2),
                            [x_max]]),
            np.repeat(np.concatenate([[0.0], np.cumsum(
                mixture.probabilities)]), 2),
            color='black', linewidth=1.2, linestyle='--', label='target')
    ax.set_xlim(x_min, x_max)
    ax.xaxis.set_major_locator(ticker.MaxNLocator(6, steps=[1, 5], prune='both'))
    ax.set_ylim(-0.03, 1.03)
    ax.set_title(f'{result.configuration.label}\n'
                 f'd1 {np.mean(result.d1):.3f}, '
                 f'osc. {np.mean(result.oscillation):.4f} '
                 f'({int(np.sum(result.collapsed))} collapsed)', fontsize=9)
    ax.grid(alpha=0.3)
  for ax in axes.flat[len(results):]:
    ax.axis('off')
  for ax in axes[-1]:
    ax.set_xlabel('return')
  for ax in axes[:, 0]:
    ax.set_ylabel('CDF')
  num_trials = len(results[0].d1) if results else 0
  fig.suptitle(f'Learned CDFs ({num_trials} trials per panel, thin lines) '
               f'over the target mixture CDF (dashed)', fontsize=10)
  fig.tight_layout()
  buffer = io.BytesIO()
  fig.savefig(buffer, format='png', dpi=dpi)
  plt.close(fig)
  return buffer.getvalue()
