"""Tests for scripts.analysis.compare_published: variants, rows, text, plot, CLI."""

import dataclasses
import json
import os
import subprocess
import sys

import numpy as np
import pytest

from scripts.analysis import compare_published as cp
from scripts.analysis import run_data
from tests.test_analysis_run_data import write_run
from zoo.configuration import agent_registry
from zoo.storage import run_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PNG_MAGIC = b'\x89PNG\r\n\x1a\n'


def make_run(agent, game, returns, frames, path='mem', episodes=None,
             source='ours', seed=1, suite='atari'):
  n = len(returns)
  return run_data.Run(source, agent, game, seed, np.arange(n),
                      np.asarray(frames, float), np.asarray(returns, float),
                      path, None if episodes is None else
                      np.asarray(episodes, float), suite=suite)


def published(agent, game, seeds_returns, source='paper'):
  """Published runs evaluated every 1M frames; seeds_returns[s][i]."""
  return [make_run(agent, game, r, np.arange(len(r)) * 1e6, source=source,
                   seed=s + 1) for s, r in enumerate(seeds_returns)]


def write_json(directory, agent, **settings):
  settings = dict(dict(seed=1, environment_name='breakout'), **settings)
  with open(os.path.join(directory, 'run.json'), 'w') as f:
    json.dump({'agent': agent, 'suite': 'atari', 'settings': settings}, f)


def _run_in(tmp_path, agent, game='breakout', name='r', suite='atari'):
  """Return a run read from a CSV without run.json, of the caller's suite."""
  path = str(tmp_path / name / 'results.csv')
  write_run(path, agent, game, 1, [1.0])
  return run_data.read_runs_csv(path, 'ours', suite)[0]


# Variants.

@pytest.mark.parametrize('agent,expected', [
    ('cr_dqn', 'CR-DQN'), ('nc_cr_dqn', 'NC-CR-DQN'),
    ('qr_dqn', 'QR-DQN-1'), ('nc_qr_dqn', 'NC-QR-DQN-1')])
def test_without_run_json_the_package_default_is_assumed_and_said(
    tmp_path, agent, expected):
  resolution = cp.resolve_variant(_run_in(tmp_path, agent), 'ours')
  assert resolution.variant.name == expected
  if agent in ('qr_dqn', 'nc_qr_dqn'):  # Two published variants each.
    assert 'assumed' in resolution.how and '--runs=LABEL' in resolution.how
  else:
    assert resolution.how.startswith(f'the only published {agent} variant')


@pytest.mark.parametrize('agent,settings,expected', [
    ('qr_dqn', dict(huber_param=0.0), 'QR-DQN-0'),
    ('qr_dqn', dict(huber_param=1.0), 'QR-DQN-1'),
    ('nc_qr_dqn', dict(huber_param=0.0, scale_grad=True), 'NC-QR-DQN-0'),
    ('nc_qr_dqn', dict(huber_param=1.0, scale_grad=False), 'NC-QR-DQN-1'),
    ('nc_qr_dqn', dict(huber_param=0.0, scale_grad=False), None),
    ('qr_dqn', dict(huber_param=0.5), None),
    ('cr_dqn', dict(head='fc', loss='cramer', huber_param=1.0), 'CR-DQN'),
    ('cr_dqn', dict(loss='qr'), None),
    ('nc_cr_dqn', dict(nc_scale_activation='softplus'), None),
])
def test_run_json_settings_decide_the_variant(tmp_path, agent, settings,
                                              expected):
  run = _run_in(tmp_path, agent)
  write_json(os.path.dirname(run.path), agent, **settings)
  resolution = cp.resolve_variant(run, 'ours')
  if expected is None:
    assert resolution.variant is None
    assert 'match no published variant' in resolution.how
  else:
    assert resolution.variant.name == expected
    assert resolution.how == 'from run.json'


def test_a_label_naming_a_variant_decides_it(tmp_path):
  run = _run_in(tmp_path, 'qr_dqn')
  assert cp.resolve_variant(run, 'QR-DQN-0').variant.name == 'QR-DQN-0'
  with pytest.raises(ValueError, match=r"'CR-DQN' is a cr_dqn variant.*"
                     r"\['QR-DQN-0', 'QR-DQN-1'\]"):
    cp.resolve_variant(run, 'CR-DQN')
  # Any other label is a name only, and the output says so.
  resolution = cp.resolve_variant(run, 'QR-DQN0')
  assert resolution.variant.name == 'QR-DQN-1'
  assert "'QR-DQN0' names no published variant" in resolution.how
  # The label wins over run.json, and the output shows the contradiction.
  write_json(os.path.dirname(run.path), 'qr_dqn', huber_param=1.0)
  resolution = cp.resolve_variant(run, 'QR-DQN-0')
  assert resolution.variant.name == 'QR-DQN-0'
  assert resolution.how.endswith('its run.json says huber_param=1.0')


def test_run_json_of_another_run_or_broken_is_ignored(tmp_path):
  run = _run_in(tmp_path, 'qr_dqn')
  write_json(os.path.dirname(run.path), 'qr_dqn', huber_param=0.0, seed=7)
  resolution = cp.resolve_variant(run, 'ours')
  assert resolution.variant.name == 'QR-DQN-1'
  assert 'describes another run' in resolution.how
  with open(os.path.join(os.path.dirname(run.path), 'run.json'), 'w') as f:
    f.write('{not json')
  assert 'run.json ignored' in cp.resolve_variant(run, 'ours').how


def test_minatar_runs_and_runs_of_unknown_suite_are_not_compared(tmp_path):
  minatar = _run_in(tmp_path, 'cr_dqn', game='breakout', suite='minatar')
  unknown = _run_in(tmp_path, 'cr_dqn', name='u', suite=None)
  comparisons = cp.compare_all([minatar, unknown],
                               references=[])
  assert [c.rows for c in comparisons] == [[], []]
  assert 'no published Atari curves' in cp.format_comparison(comparisons[0])
  assert ('no run.json records its suite; pass --suite=atari' in
          cp.format_comparison(comparisons[1]))


# Rows.

def test_rows_mark_in_range_below_above_partial_and_unmatched():
  refs = published('CR-DQN', 'pong', [[-21, -20, -10], [-21, -18, -5],
                                      [-20, -19, 0]])
  run = make_run('cr_dqn', 'pong', [-21, -17, -12, -7],
                 [0, 1e6, 1.5e6, 2e6], episodes=[2, 3, 1, 4])
  rows = cp.compare_run(run, refs)
  assert [r.mark for r in rows] == [cp.IN_RANGE, cp.ABOVE, cp.NO_COUNTERPART,
                                    cp.IN_RANGE]
  assert (rows[1].low, rows[1].mean, rows[1].high, rows[1].num_seeds) == (
      -20, -19, -18, 3)
  marks = [cp.compare_run(make_run('cr_dqn', 'pong', [value], [frame],
                                   episodes=[episodes]), refs)[0].mark
           for value, frame, episodes in [(-22, 0, 1), (-19, 1e6, 0),
                                          (np.nan, 0, 1), (-19, 5e5, 0)]]
  assert marks == [cp.BELOW, cp.PARTIAL, cp.MISSING,
                   f'{cp.NO_COUNTERPART}; {cp.PARTIAL}']


@pytest.fixture(scope='module')
def references():
  return run_data.load_reference('paper') + run_data.load_reference('dqn_zoo')


@pytest.mark.parametrize('name', list(cp.VARIANTS))
def test_a_published_seed_of_each_variant_lies_in_its_range(references, name):
  variant = cp.VARIANTS[name]
  runs = [r for r in references if (r.source, r.agent, r.game) == (
      variant.source, variant.reference_agent, 'breakout')]
  assert len(runs) == (5 if variant.source == 'dqn_zoo' else 3)
  seed = runs[1]
  ours = make_run(variant.package, 'breakout', seed.eval_return, seed.frame,
                  source=name)
  (comparison,) = cp.compare_all([ours], references=references)
  assert comparison.resolution.variant is variant
  assert len(comparison.rows) == 201
  assert all(r.mark == cp.IN_RANGE for r in comparison.rows)
  assert all(r.num_seeds == len(runs) for r in comparison.rows)


def test_text_reports_counts_and_the_chance_level():
  refs = published('QR-DQN-0', 'breakout', [[0, 1], [1, 3], [2, 5]])
  run = make_run('qr_dqn', 'breakout', [1, 9, 4], [0, 1e6, 2000],
                 source='QR-DQN-0')
  (comparison,) = cp.compare_all([run], references=refs)
  text = cp.format_comparison(comparison)
  assert 'published: QR-DQN-0 (paper runs, 3 seeds)' in text
  assert '3 iterations, 2 compared: 1 in range, 0 below, 1 above.' in text
  assert "outside 3 published seeds' range at 50% of iterations" in text
  assert 'evaluate every 1,000,000 frames' in text


def test_a_game_without_published_runs_of_the_variant_is_said(tmp_path):
  refs = published('NC-CR-DQN', 'breakout', [[0], [1]])
  run = make_run('nc_cr_dqn', 'pong', [1], [0])
  (comparison,) = cp.compare_all([run], references=refs)
  assert 'no published NC-CR-DQN runs on pong (published games: breakout)' in (
      cp.format_comparison(comparison))


def test_run_json_settings_off_the_protocol_are_listed(tmp_path):
  run = _run_in(tmp_path, 'cr_dqn')
  write_json(os.path.dirname(run.path), 'cr_dqn', num_train_frames=2000,
             num_envs=8, environment_mode='vector', learning_rate=5e-5,
             optimizer_epsilon=0.01 / 32 * 2 / 201, num_iterations=2,
             # Where a run writes and what it shows are not protocol.
             tensorboard_dir='runs/cr_dqn/asterix/seed_1/tensorboard',
             checkpoint_dir='runs/cr_dqn/asterix/seed_1/checkpoints',
             results_csv_path='runs/cr_dqn/asterix/seed_1/results.csv',
             tensorboard_loss_period=64, progress_interval_seconds=1.0)
  differences = cp.protocol_differences(run, cp.resolve_variant(run, 'ours'))
  assert differences == ['environment_mode=vector (reference)',
                         'num_envs=8 (1)', 'num_train_frames=2000 (1000000)']


# Plot and entry point.

def test_plot_writes_a_png(tmp_path):
  refs = published('CR-DQN', 'pong', [[-21, -20, -10], [-21, -18, -5]])
  runs = [make_run('cr_dqn', 'pong', [-21, -25], [0, 1e6]),
          make_run('cr_dqn', 'breakout', [1], [0], suite='minatar')]
  path = cp.plot(cp.compare_all(runs, references=refs),
                 str(tmp_path / 'c.png'))
  with open(path, 'rb') as f:
    assert f.read(8) == PNG_MAGIC
  assert os.path.getsize(path) > 5_000


def test_bad_arguments_are_refused_before_work(tmp_path):
  with pytest.raises(ValueError, match='Pass --runs'):
    cp.check_arguments([], None)
  with pytest.raises(ValueError, match='does not exist'):
    cp.check_arguments([str(tmp_path / 'nothing')], None)
  with pytest.raises(ValueError, match='.png or .pdf'):
    cp.check_arguments([str(tmp_path)], str(tmp_path / 'c.svg'))


def test_cli_compares_a_published_seed_and_a_short_run(tmp_path):
  # Our "run" is the paper's CR-DQN seed 2 on pong (first 4 evaluations): it
  # lies in the published range. A short run has a counterpart at frame 0 only.
  seed = [r for r in run_data.load_reference('paper')
          if (r.agent, r.game, r.seed) == ('CR-DQN', 'pong', 2)][0]
  write_run(str(tmp_path / 'paper' / 'results.csv'), 'cr_dqn', 'pong', 2,
            list(seed.eval_return[:4]), frames_per_iteration=1_000_000)
  short = tmp_path / 'short.csv'
  write_run(str(short), 'cr_dqn', 'breakout', 1, [1, 2],
            frames_per_iteration=2000)
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.compare_published',
       f'--runs={tmp_path / "paper"}', f'--runs=mine={short}',
       f'--plot={tmp_path / "check.png"}', '--suite=atari'],
      cwd=REPO, capture_output=True, text=True, timeout=300)
  assert result.returncode == 0, result.stderr
  out = result.stdout
  assert 'published: CR-DQN (paper runs, 3 seeds)' in out
  assert '4 iterations, 4 compared: 4 in range, 0 below, 0 above.' in out
  assert 'cr_dqn on breakout, seed 1 [mine]' in out
  assert '2 iterations, 1 compared' in out
  assert cp.NO_COUNTERPART in out
  assert (tmp_path / 'check.png').read_bytes()[:8] == PNG_MAGIC


def test_a_results_session_is_compared_as_a_runs_directory(tmp_path):
  runs = tmp_path / 'sessions' / 's1' / 'runs'
  for piece, game, suite in (('atari-breakout', 'breakout', 'atari'),
                             ('minatar-asterix', 'minatar-asterix', 'minatar')):
    path = str(runs / piece / 'CR-DQN' / 'cr_dqn' / game / 'seed_1' /
               'results.csv')
    write_run(path, 'cr_dqn', game, 1, [1.0])
    # The preset's settings: the run is named CR-DQN, run by cr_dqn.
    run_json.write(path, 'cr_dqn', suite, dict(
        dataclasses.asdict(agent_registry.presets()['CR-DQN']),
        environment_name=game, seed=1))
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.compare_published',
       f'--runs={runs}'], cwd=REPO, capture_output=True, text=True,
      timeout=300)
  assert result.returncode == 0, result.stderr
  assert 'CR-DQN on breakout, seed 1' in result.stdout
  assert 'variant: from run.json' in result.stdout
  assert 'not compared: a MinAtar run' in result.stdout
