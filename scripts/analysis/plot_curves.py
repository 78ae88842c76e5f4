r"""Plot Atari learning curves: per game, a grid of all games, and the median over games.

  python -m scripts.analysis.plot_curves --runs=runs/ --output_dir=results/plots
  python -m scripts.analysis.plot_curves --reference_agents=CR-DQN,qrdqn --games=pong,breakout \
      --output_dir=/tmp/plots --format=png,pdf

Each curve is the mean +- std over seeds of the smoothed evaluation return
(human-normalised, or raw with --normalized=false) against frames; ours solid,
references dashed. Writes games/<game>.<fmt>, all_games.<fmt> and
aggregate_median.<fmt> (docs/experiments/atari57.md). MinAtar runs show raw
returns against training steps and stay out of the median over games.
"""

import os
import sys
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from absl import app
from absl import flags
import matplotlib
matplotlib.use('Agg')  # Files only; never needs a display.
import matplotlib.pyplot as plt  # pylint: disable=g-import-not-at-top
import numpy as np

from scripts.analysis import run_data
from zoo.storage import files
from zoo.configuration import cli

DEFAULT_REFERENCE_AGENTS = ('CR-DQN', 'qrdqn', 'iqn', 'c51', 'dqn')
# Okabe & Ito (2008), without yellow (too pale on white) and black first.
OKABE_ITO = ('#000000', '#E69F00', '#56B4E9', '#009E73', '#0072B2', '#D55E00',
             '#CC79A7', '#F0E442')

FLAGS = flags.FLAGS


def define_flags() -> None:
  """Define this entry point's flags (only when run, to avoid flag clashes)."""
  flags.DEFINE_multi_string(
      'runs', [], 'Directory tree of our run CSVs, as DIR or LABEL=DIR; '
      'repeatable.')
  flags.DEFINE_list(
      'reference_agents', list(DEFAULT_REFERENCE_AGENTS),
      'Reference agents to overlay (paper: CR-DQN, NC-CR-DQN, NC-QR-DQN-1, '
      'NC-QR-DQN-0, QR-DQN-0; DQN Zoo: dqn, double_q, prioritized, c51, qrdqn, '
      'iqn, rainbow). Empty: none.')
  flags.DEFINE_list(
      'games', None, 'Games to plot (default: the games of --runs, else all 57).')
  flags.DEFINE_string('output_dir', None, 'Where to write plots.')
  flags.DEFINE_bool(
      'normalized', True, 'Plot human-normalised scores (else raw returns).')
  flags.DEFINE_list('format', ['png'], 'File formats: png and/or pdf.')
  flags.DEFINE_integer(
      'smoothing_window', 5, 'Trailing moving-average window, in iterations.')
  flags.DEFINE_bool('per_game', True, 'Write one file per game.')
  run_data.define_suite_flag()


Curve = Tuple[np.ndarray, np.ndarray, np.ndarray, int]  # frames, mean, std, seeds


def smooth(values: np.ndarray, window: int) -> np.ndarray:
  """Return the trailing moving average of `values` [..., T], ignoring NaNs."""
  if window < 1:
    raise ValueError(f'smoothing window must be >= 1, got {window}.')
  values = np.asarray(values, dtype=np.float64)
  length = values.shape[-1]
  shifted = np.full((window,) + values.shape, np.nan)
  # Lags beyond the run's length stay NaN (a run shorter than the window).
  for lag in range(min(window, length)):
    shifted[lag, ..., lag:] = values[..., :length - lag]
  with np.errstate(all='ignore'):
    count = np.sum(np.isfinite(shifted), axis=0)
    total = np.nansum(shifted, axis=0)
    return np.where(count > 0, total / np.maximum(count, 1), np.nan)


def seed_curves(runs: Sequence[run_data.Run], human_random, normalized: bool,
                window: int) -> Tuple[np.ndarray, np.ndarray]:
  """Return frames [T] and smoothed scores [seeds, T] indexed by iteration (NaN gaps)."""
  length = max(r.last_iteration for r in runs) + 1
  scores = np.full((len(runs), length), np.nan)
  frames = np.full((len(runs), length), np.nan)
  for i, run in enumerate(runs):
    values = run.eval_return
    if normalized and run.suite == 'atari':
      values = run_data.human_normalized(run.game, values, human_random)
    scores[i, run.iteration] = values
    frames[i, run.iteration] = run.frame
  with warnings.catch_warnings(action='ignore', category=RuntimeWarning):
    # Iterations a seed has not reached yet are NaN.
    return np.nanmean(frames, axis=0), smooth(scores, window)


def game_curve(runs: Sequence[run_data.Run], human_random, normalized: bool,
               window: int) -> Curve:
  """Return frames, mean and std over seeds, and the number of seeds."""
  frames, scores = seed_curves(runs, human_random, normalized, window)
  with warnings.catch_warnings(action='ignore', category=RuntimeWarning):
    mean = np.nanmean(scores, axis=0)
    std = np.nanstd(scores, axis=0)
  keep = np.isfinite(mean) & np.isfinite(frames)
  return frames[keep], mean[keep], std[keep], len(runs)


def median_curve(runs_by_game: Dict[str, List[run_data.Run]], human_random,
                 window: int) -> Tuple[np.ndarray, np.ndarray, int]:
  """Return frames and the median over games of the seed-mean normalised score.

  Only iterations reached on every game count, so that the set of games behind
  the median never changes along the curve.
  """
  per_game = [seed_curves(runs, human_random, True, window)
              for runs in runs_by_game.values()]
  length = min(len(frames) for frames, _ in per_game)
  with warnings.catch_warnings(action='ignore', category=RuntimeWarning):
    means = np.stack([np.nanmean(s[:, :length], axis=0) for _, s in per_game])
    frames = np.nanmean(np.stack([f[:length] for f, _ in per_game]), axis=0)
  keep = np.all(np.isfinite(means), axis=0) & np.isfinite(frames)
  return frames[keep], np.median(means[:, keep], axis=0), len(per_game)


def _axis_labels(minatar: bool, normalized: bool) -> Tuple[str, str]:
  """Return (x label, y label) of a game's panel."""
  if minatar:
    return ('training steps (millions)',
            'evaluation return (raw; MinAtar has no human scores)')
  return ('frames (millions)',
          'human-normalised score' if normalized else 'evaluation return')


def _label(source: str, agent: str) -> str:
  return agent if source in ('ours',) else f'{agent} ({source})'


def color(i: int) -> str:
  """Return the i-th colour of the palette (cycling)."""
  return OKABE_ITO[i % len(OKABE_ITO)]


def band(ax, x, line, low, high, **style):
  """Plot a line and a pale band from low to high; return the line."""
  handle, = ax.plot(x, line, **style)
  ax.fill_between(x, low, high, color=style['color'], alpha=0.15, linewidth=0)
  return handle


def panels(count: int, columns: int, width: float, height: float):
  """Return a figure of `count` panels in rows of `columns`, and their axes."""
  rows = -(-count // columns)
  fig, axes = plt.subplots(rows, columns, squeeze=False,
                           figsize=(width * columns, height * rows))
  for ax in axes.flat[count:]:
    ax.axis('off')
  return fig, axes.flat[:count]


def save(fig, *paths: str) -> List[str]:
  """Write a figure to each path atomically, in the format its extension
  names; close it and return the paths.
  """
  for path in paths:
    with files.atomic_path(path) as tmp:
      fig.savefig(tmp, format=os.path.splitext(path)[1][1:], dpi=100,
                  bbox_inches='tight')
  plt.close(fig)
  return list(paths)


def _plot_game(ax, game_runs, styles, human_random, normalized, window,
               legend_seeds: bool = True):
  for key, runs in game_runs.items():
    frames, mean, std, num_seeds = game_curve(runs, human_random, normalized,
                                              window)
    band(ax, frames / 1e6, mean, mean - std, mean + std, **styles[key],
         label=_label(*key) + (
             f' [{num_seeds} seed{"s" * (num_seeds != 1)}]' if legend_seeds
             else ''))


def plot_all(runs: Sequence[run_data.Run], output_dir: str,
             games: Optional[Sequence[str]] = None, normalized: bool = True,
             formats: Sequence[str] = ('png',), window: int = 5,
             per_game: bool = True, human_random=None) -> List[str]:
  """Write the per-game, grid and aggregate plots; return the written paths."""
  for fmt in formats:
    if fmt not in ('png', 'pdf'):
      raise ValueError(f'--format: {fmt!r} is not png or pdf.')
  human_random = human_random or run_data.load_human_random()
  by_agent = run_data.group_by_agent(run_data.check_suites(runs))
  if not by_agent:
    raise ValueError('Nothing to plot: give --runs and/or --reference_agents.')
  if games is None:
    ours = [r.game for r in runs if r.source not in run_data.REFERENCE_FILES]
    games = sorted(set(ours or [r.game for r in runs]))
  minatar = {r.game for r in runs if r.suite == 'minatar'}
  for game in set(games) - minatar:
    run_data.human_normalized(game, 0.0, human_random)  # Unknown: error.
  styles = {}  # References dashed.
  for i, (source, agent) in enumerate(by_agent):
    reference = source in run_data.REFERENCE_FILES
    styles[(source, agent)] = dict(color=color(i), linewidth=(
        1.2 if reference else 2.0), linestyle='--' if reference else '-')
  # {game: {(source, agent): runs}}
  table: Dict[str, Dict[Tuple[str, str], List[run_data.Run]]] = {}
  for key, agent_runs in by_agent.items():
    for run in agent_runs:
      if run.game in games:
        table.setdefault(run.game, {}).setdefault(key, []).append(run)
  games = [g for g in games if g in table]
  if not games:
    raise ValueError('None of the selected games has runs to plot.')
  written = []

  def out(*name: str) -> List[str]:
    return [os.path.join(output_dir, *name) + f'.{fmt}' for fmt in formats]

  if per_game:
    for game in games:
      fig, ax = plt.subplots(figsize=(6, 4))
      _plot_game(ax, table[game], styles, human_random, normalized, window)
      x_label, y_label = _axis_labels(game in minatar, normalized)
      ax.set(title=game, xlabel=x_label, ylabel=y_label)
      ax.grid(alpha=0.3)
      ax.legend(fontsize=8)
      written += save(fig, *out('games', game))

  fig, axes = panels(len(games), int(np.ceil(np.sqrt(len(games)))), 3, 2.4)
  for ax, game in zip(axes, games):
    _plot_game(ax, table[game], styles, human_random, normalized, window,
               legend_seeds=False)
    ax.set_title(game, fontsize=9)
    ax.tick_params(labelsize=7)
    if game in minatar:
      ax.set_ylabel('raw return (MinAtar)', fontsize=7)
  plotted = [k for k in by_agent if any(k in table[g] for g in games)]
  handles = [plt.Line2D([], [], **styles[k]) for k in plotted]
  fig.legend(handles, [_label(*k) for k in plotted], loc='lower center',
             ncol=min(len(plotted), 6), bbox_to_anchor=(0.5, 1.0))
  atari_games = [g for g in games if g not in minatar]
  x_label, y_label = _axis_labels(not atari_games, normalized)
  if atari_games and len(atari_games) < len(games):
    x_label = 'frames (Atari), training steps (MinAtar), millions'
  fig.supxlabel(x_label)
  fig.supylabel(y_label)
  fig.tight_layout()
  written += save(fig, *out('all_games'))

  if not atari_games:
    return written  # No human scores, so no median over games.
  fig, ax = plt.subplots(figsize=(7, 4.5))
  for key in by_agent:
    runs_by_game = {g: table[g][key] for g in atari_games if key in table[g]}
    if not runs_by_game:
      continue
    frames, median, num_games = median_curve(runs_by_game, human_random, window)
    ax.plot(frames / 1e6, median, label=f'{_label(*key)} [{num_games} games]',
            **styles[key])
  ax.set(xlabel='frames (millions)', ylabel='median human-normalised score',
         title='Median over games (mean over seeds)')
  ax.grid(alpha=0.3)
  ax.legend(fontsize=8)
  written += save(fig, *out('aggregate_median'))
  return written


def main(unused_argv):
  if not FLAGS.output_dir:
    raise app.UsageError('--output_dir is required.')
  try:
    runs = run_data.load_with_references(
        FLAGS.runs, FLAGS.reference_agents or [], FLAGS.suite)
    written = plot_all(runs, FLAGS.output_dir,
                       games=FLAGS.games, normalized=FLAGS.normalized,
                       formats=FLAGS.format, window=FLAGS.smoothing_window,
                       per_game=FLAGS.per_game)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  for path in written:
    print(path)
  print(f'wrote {len(written)} files to {FLAGS.output_dir}', file=sys.stderr)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
