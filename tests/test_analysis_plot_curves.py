"""Tests for scripts.analysis.plot_curves: smoothing, curves and the written plots."""

import os
import subprocess
import sys

import numpy as np
import pytest

from scripts.analysis import plot_curves
from scripts.analysis import run_data
from tests.test_analysis_run_data import write_run

PNG_MAGIC = b'\x89PNG\r\n\x1a\n'
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
HUMAN_RANDOM = {'g1': (0.0, 10.0), 'g2': (0.0, 100.0)}


def make_run(game, seed, returns, agent='a', source='ours', frames=None,
             suite='atari'):
  n = len(returns)
  frames = np.arange(n) * 1e6 if frames is None else np.asarray(frames, float)
  return run_data.Run(source, agent, game, seed, np.arange(n), frames,
                      np.asarray(returns, float), 'mem', suite=suite)


def test_smooth_is_a_trailing_moving_average():
  values = np.array([1.0, 2.0, 3.0, 4.0, 5.0, 6.0])
  np.testing.assert_allclose(plot_curves.smooth(values, 3),
                             [1.0, 1.5, 2.0, 3.0, 4.0, 5.0])
  np.testing.assert_allclose(plot_curves.smooth(values, 1), values)
  # NaNs (iterations not reached) are skipped, batches smooth row by row.
  batch = np.array([[1.0, np.nan, 3.0], [2.0, 4.0, 6.0]])
  np.testing.assert_allclose(plot_curves.smooth(batch, 2),
                             [[1.0, 1.0, 3.0], [2.0, 3.0, 5.0]])
  # A window longer than the run (a short MinAtar run) averages what exists.
  np.testing.assert_allclose(plot_curves.smooth(values[:2], 5), [1.0, 1.5])
  with pytest.raises(ValueError):
    plot_curves.smooth(values, 0)


@pytest.mark.parametrize('length', [1, 2, 3, 4, 6])
def test_smooth_handles_runs_shorter_than_the_window(length):
  values = np.arange(2.0 * length).reshape(2, length)
  smoothed = plot_curves.smooth(values, 5)
  expected = np.cumsum(values, axis=1) / np.arange(1, length + 1)
  expected[:, 5:] = [[np.mean(row[i - 4:i + 1]) for i in range(5, length)]
                     for row in values]
  np.testing.assert_allclose(smoothed, expected)


def test_plot_all_plots_runs_of_one_to_three_rows(tmp_path):
  runs = [make_run('pong', s, np.arange(s) - 21.0, agent='cr_dqn')
          for s in (1, 2, 3)]
  written = plot_curves.plot_all(runs, str(tmp_path), window=5)
  for path in written:
    _check_png(path, min_bytes=1_000)


def test_game_curve_mean_and_std_over_seeds():
  runs = [make_run('g1', 1, [0, 10, 0]), make_run('g1', 2, [0, 0, 10, 10])]
  frames, mean, std, seeds = plot_curves.game_curve(runs, HUMAN_RANDOM, True, 1)
  assert seeds == 2
  np.testing.assert_allclose(frames, [0, 1e6, 2e6, 3e6])
  np.testing.assert_allclose(mean, [0.0, 0.5, 0.5, 1.0])
  np.testing.assert_allclose(std, [0.0, 0.5, 0.5, 0.0])
  _, raw, _, _ = plot_curves.game_curve(runs, HUMAN_RANDOM, False, 1)
  np.testing.assert_allclose(raw, [0.0, 5.0, 5.0, 10.0])


def test_median_curve_stops_where_a_game_stops():
  runs_by_game = {'g1': [make_run('g1', 1, [0, 10, 5])],
                  'g2': [make_run('g2', 1, [0, 50])],
                  'g3': [make_run('g1', 2, [10, 10, 10])]}
  frames, median, num_games = plot_curves.median_curve(
      runs_by_game, HUMAN_RANDOM, 1)
  assert num_games == 3
  np.testing.assert_allclose(frames, [0, 1e6])
  np.testing.assert_allclose(median, [0.0, 1.0])


def _check_png(path, min_bytes=5_000):
  assert os.path.getsize(path) > min_bytes, path
  with open(path, 'rb') as f:
    assert f.read(8) == PNG_MAGIC, path


def test_plot_all_writes_valid_pngs(tmp_path):
  runs = [make_run(g, s, np.linspace(0, 10 * s, 12) + (g == 'pong') * -21,
                   agent='cr_dqn') for g in ('pong', 'breakout') for s in (1, 2)]
  runs += [make_run('pong', 1, np.linspace(-21, 0, 12), agent='dqn',
                    source='dqn_zoo')]
  written = plot_curves.plot_all(runs, str(tmp_path), formats=('png', 'pdf'))
  names = sorted(os.path.relpath(p, tmp_path) for p in written)
  assert names == sorted(
      ['games/pong.png', 'games/pong.pdf', 'games/breakout.png',
       'games/breakout.pdf', 'all_games.png', 'all_games.pdf',
       'aggregate_median.png', 'aggregate_median.pdf'])
  for path in written:
    if path.endswith('.png'):
      _check_png(path)
    else:
      assert open(path, 'rb').read(5) == b'%PDF-'
  assert not [n for n in os.listdir(tmp_path) if n.startswith('.tmp_')]


def test_plot_all_rejects_bad_input(tmp_path):
  runs = [make_run('pong', 1, [0, 1])]
  with pytest.raises(ValueError, match='Unknown game'):
    plot_curves.plot_all(runs, str(tmp_path), games=['pongg'])
  with pytest.raises(ValueError, match='png or pdf'):
    plot_curves.plot_all(runs, str(tmp_path), formats=('svgz',))


def test_cli_overlays_our_runs_on_references(tmp_path):
  runs_dir = tmp_path / 'runs'
  for seed in (1, 2):
    write_run(str(runs_dir / str(seed) / 'results.csv'), 'cr_dqn', 'pong',
              seed, list(np.linspace(-21, -10, 8)), frames_per_iteration=400,
              suite='atari')
  out = tmp_path / 'plots'
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.plot_curves', f'--runs={runs_dir}',
       '--reference_agents=CR-DQN,qrdqn', f'--output_dir={out}',
       '--nonormalized'],
      cwd=REPO, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr
  for name in ('games/pong.png', 'all_games.png', 'aggregate_median.png'):
    _check_png(out / name)


def test_minatar_runs_are_plotted_raw_and_stay_out_of_the_median(tmp_path):
  runs = [make_run('minatar-breakout', s, [0.4, 3.0 * s, 6.0 * s],
                   agent='cr_dqn', frames=[0, 1e5, 2e5], suite='minatar')
          for s in (1, 2)]
  # Normalising would need human scores, which MinAtar lacks: raw values.
  frames, mean, _, seeds = plot_curves.game_curve(runs, HUMAN_RANDOM, True, 1)
  assert seeds == 2
  np.testing.assert_allclose(frames, [0, 1e5, 2e5])
  np.testing.assert_allclose(mean, [0.4, 4.5, 9.0])
  written = plot_curves.plot_all(runs, str(tmp_path))
  assert sorted(os.path.relpath(p, tmp_path) for p in written) == [
      'all_games.png', 'games/minatar-breakout.png']
  for path in written:
    _check_png(path)
  # Beside an Atari game, the median over games counts the Atari one only.
  runs += [make_run('pong', 1, [-21, -10, 0], agent='cr_dqn')]
  written = plot_curves.plot_all(runs, str(tmp_path / 'mixed'), per_game=False)
  assert sorted(os.path.relpath(p, tmp_path / 'mixed') for p in written) == [
      'aggregate_median.png', 'all_games.png']
  assert plot_curves._axis_labels(True, True)[1].startswith(
      'evaluation return (raw')
  with pytest.raises(ValueError, match='no run.json recording their suite'):
    plot_curves.plot_all([make_run('pong', 1, [0], suite=None)],
                         str(tmp_path))
