"""Tests for scripts.analysis.aggregate: the paper's summary, on synthetic and reference runs."""

import collections
import csv
import gzip
import os
import subprocess
import sys

import numpy as np
import pytest

from scripts.analysis import aggregate
from scripts.analysis import run_data
from tests import csv_check
from tests.test_analysis_run_data import write_run

HUMAN_RANDOM = {'g1': (0.0, 10.0), 'g2': (0.0, 100.0), 'g3': (10.0, 20.0)}
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def make_run(game, seed, returns, agent='a', source='ours', suite='atari'):
  n = len(returns)
  return run_data.Run(source, agent, game, seed, np.arange(n),
                      np.arange(n) * 1e6, np.asarray(returns, float), 'mem',
                      suite=suite)


def test_best_agent_summary_hand_computed():
  # num_iterations=2: three evaluations each; best = max over them.
  runs = [make_run('g1', 1, [0, 5, 2]),     # best 5/10   = 0.5
          make_run('g2', 1, [0, 10, 20]),   # best 20/100 = 0.2
          make_run('g3', 1, [10, 30, 15]),  # best 20/10  = 2.0
          make_run('g1', 2, [1, 1, 10]),    # 1.0
          make_run('g2', 2, [90, 0, 0]),    # 0.9
          make_run('g3', 2, [11, 12, 13])]  # 0.3
  summary = aggregate.summarise_agent(runs, HUMAN_RANDOM, num_iterations=2,
                                      num_games=3, reps=500)
  assert summary.status == aggregate.STATUS_COMPLETE
  assert (summary.num_games, summary.num_seeds) == (3, 2)
  assert (summary.runs_complete, summary.runs_incomplete,
          summary.runs_missing) == (6, 0, 0)
  # Seed medians: median(0.5, 0.2, 2.0) = 0.5, median(1.0, 0.9, 0.3) = 0.9.
  assert summary.point['best_agent_summary'] == pytest.approx(0.7)
  # Game means 0.75, 0.55, 1.15.
  assert summary.point['median'] == pytest.approx(0.75)
  assert summary.point['mean'] == pytest.approx((0.75 + 0.55 + 1.15) / 3)
  # 6 sorted: .2 .3 .5 .9 1 2 -> cut 1 each end.
  assert summary.point['iqm'] == pytest.approx((0.3 + 0.5 + 0.9 + 1.0) / 4)
  for name, (low, high) in summary.ci.items():
    assert low <= summary.point[name] <= high, name


def test_best_is_taken_up_to_num_iterations():
  runs = [make_run('g1', 1, [0, 1, 2, 9])]
  summary = aggregate.summarise_agent(runs, HUMAN_RANDOM, num_iterations=2,
                                      num_games=1, reps=10)
  assert summary.point['best_agent_summary'] == pytest.approx(0.2)


def test_incomplete_and_missing_runs_make_a_partial_agent():
  runs = [make_run('g1', 1, [0, 5, 2]),
          make_run('g2', 1, [0, 10]),        # incomplete: stops at iteration 1
          make_run('g1', 2, [1, 1, 10])]     # (g2, seed 2) is missing
  summary = aggregate.summarise_agent(runs, HUMAN_RANDOM, num_iterations=2,
                                      num_games=2, reps=10)
  assert summary.status == aggregate.STATUS_PARTIAL
  assert (summary.runs_complete, summary.runs_incomplete,
          summary.runs_missing) == (2, 1, 1)
  assert summary.ci == {}
  # Best so far: seed 1 median(0.5, 0.1) = 0.3, seed 2 median(1.0) = 1.0.
  assert summary.point['best_agent_summary'] == pytest.approx(0.65)
  markdown = aggregate.to_markdown([summary], num_iterations=2)
  assert 'Partial agents' in markdown
  row = aggregate.to_csv_rows([summary])[0]
  assert row['status'] == 'partial' and row['median_ci_low'] == ''


def test_fewer_games_than_the_full_set_is_a_subset():
  runs = [make_run('g1', 1, [0, 5, 2]), make_run('g1', 2, [0, 3, 2])]
  summary = aggregate.summarise_agent(runs, HUMAN_RANDOM, num_iterations=2,
                                      num_games=3, reps=10)
  assert summary.status == aggregate.STATUS_SUBSET
  assert summary.ci


def _independent_best_agent_summaries(path, columns_ok=True):
  """Recompute the paper's summary with plain csv + numpy, for the test only."""
  with open(run_data.reference_path('atari_human_random.csv')) as f:
    human_random = {r['environment_name']: (float(r['random']), float(r['human']))
                    for r in csv.DictReader(f)}
  best = collections.defaultdict(lambda: -np.inf)
  with gzip.open(path, 'rt') as f:
    for row in csv.DictReader(f):
      game = row['environment_name']
      low, high = human_random[game]
      score = (float(row['eval_episode_return']) - low) / (high - low)
      key = (row['agent'], row['seed'], game)
      best[key] = max(best[key], score)
  per_seed = collections.defaultdict(lambda: collections.defaultdict(list))
  for (agent, seed, _), score in best.items():
    per_seed[agent][seed].append(score)
  return {agent: np.mean([np.median(v) for v in seeds.values()])
          for agent, seeds in per_seed.items()}


@pytest.fixture(scope='module')
def reference_summaries():
  runs = run_data.load_with_references([])
  return {(s.source, s.agent): s for s in aggregate.summarise(runs, reps=200)}


@pytest.mark.parametrize('source', ['paper', 'dqn_zoo'])
def test_reference_summaries_match_an_independent_computation(
    reference_summaries, source):
  expected = _independent_best_agent_summaries(
      run_data.reference_path(run_data.REFERENCE_FILES[source]))
  assert expected
  for agent, value in expected.items():
    summary = reference_summaries[(source, agent)]
    assert summary.point['best_agent_summary'] == pytest.approx(value), agent


def test_reference_games_and_seeds_are_reported_honestly(reference_summaries):
  cr_dqn = reference_summaries[('paper', 'CR-DQN')]
  assert (cr_dqn.status, cr_dqn.num_games, cr_dqn.num_seeds) == (
      'complete', 57, 3)
  # The paper's CR-DQN best-agent median is about 2x human.
  assert 1.9 < cr_dqn.point['best_agent_summary'] < 2.1
  variant = reference_summaries[('paper', 'NC-CR-DQN')]
  assert (variant.status, variant.num_games, variant.num_seeds) == (
      'subset', 4, 3)
  for agent in ['dqn', 'double_q', 'prioritized', 'c51', 'qrdqn', 'iqn',
                'rainbow']:
    zoo = reference_summaries[('dqn_zoo', agent)]
    assert (zoo.status, zoo.num_games, zoo.num_seeds) == ('complete', 57, 5)


def test_cli_writes_csv_and_markdown_beside_references(tmp_path):
  runs_dir = tmp_path / 'runs'
  for seed in (1, 2):
    write_run(str(runs_dir / f's{seed}' / 'results.csv'), 'cr_dqn', 'pong',
              seed, [-21, -20, -15])
  write_run(str(runs_dir / 'p' / 'results.csv'), 'qr_dqn', 'pong', 1, [-21])
  out = tmp_path / 'out'
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.aggregate', f'--runs={runs_dir}',
       '--reference_agents=dqn', '--num_iterations=2', '--bootstrap_reps=100',
       f'--output_dir={out}', '--suite=atari'],  # CSVs without a run.json.
      cwd=REPO, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr
  assert '| ours | cr_dqn | subset | 1 | 2 |' in result.stdout
  assert '| dqn_zoo | dqn | complete | 57 | 5 |' in result.stdout
  assert 'Partial agents' in result.stdout
  with open(out / 'summary.csv') as f:
    rows = {r['agent']: r for r in csv.DictReader(f)}
  assert set(rows) == {'cr_dqn', 'qr_dqn', 'dqn'}
  assert rows['qr_dqn']['status'] == 'partial'
  # Pong: random -20.7, human 14.6; best -15 -> (5.7 / 35.3).
  assert float(rows['cr_dqn']['best_agent_summary']) == pytest.approx(
      5.7 / 35.3, rel=1e-4)
  assert (out / 'summary.md').read_text().startswith('Human-normalised')


def test_summary_csv_parses_back_to_its_header(tmp_path):
  # Labels come from --runs=LABEL=DIR and may hold commas and quotes.
  label = 'QR-DQN, κ=0 "short"'
  runs = [make_run('g1', 1, [0, 5, 2], source=label),
          make_run('g2', 1, [0, 1], agent='b')]
  summaries = aggregate.summarise(runs, HUMAN_RANDOM, num_iterations=2,
                                  num_games=2, reps=10)
  csv_path, _ = aggregate.write_outputs(summaries, str(tmp_path), 'md')
  rows = csv_check.read_back_file(csv_path)
  assert list(rows[0]) == list(aggregate.CSV_COLUMNS)
  assert [r['source'] for r in rows] == [label, 'ours']


def test_cli_needs_runs_or_reference():
  result = subprocess.run([sys.executable, '-m', 'scripts.analysis.aggregate'],
                          cwd=REPO, capture_output=True, text=True, timeout=60)
  assert result.returncode != 0
  assert '--reference' in result.stderr


def test_minatar_runs_are_refused_naming_the_tools_that_summarise_them():
  runs = [make_run('g1', 1, [0, 5]),
          make_run('breakout', 1, [0.5, 8.0], suite='minatar')]
  with pytest.raises(ValueError, match=r'1 MinAtar run.*human scores') as e:
    aggregate.summarise(runs, HUMAN_RANDOM, reps=10)
  for tool in ('scripts.analysis.compare', 'scripts.analysis.plot_curves',
               'scripts.campaign --campaign=minatar_study --report'):
    assert tool in str(e.value)
