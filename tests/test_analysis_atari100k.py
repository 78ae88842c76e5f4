"""Tests for scripts.analysis.atari100k: the published data and the aggregation."""

import csv
import io
import os

import numpy as np
import pytest

from scripts.analysis import atari100k
from scripts.analysis import bootstrap
from scripts.analysis import run_data
from zoo.configuration import agent_registry
from zoo.storage import run_json

_RUNS_PER_GAME = {'DER': 100, 'DrQ': 100, 'DrQ(eps)': 100, 'OTRainbow': 100,
                  'SPR': 100, 'CURL': 100, 'SimPLe': 5}


@pytest.fixture(scope='module')
def published():
  return atari100k.load_published()


@pytest.fixture(scope='module')
def human_random():
  return run_data.load_human_random()


def test_published_file_holds_every_agent_and_game(published):
  assert sorted(published) == sorted(atari100k.PUBLISHED_AGENTS)
  for agent, per_game in published.items():
    assert sorted(per_game) == sorted(atari100k.GAMES), agent
    counts = {len(v) for v in per_game.values()}
    if agent == 'BBF':  # The file's seeds: 52 to 60 per game.
      assert min(counts) == 52 and max(counts) == 60
    else:
      assert counts == {_RUNS_PER_GAME[agent]}, agent


# Mean and median (over games of the per-game mean over runs) of the
# human-normalised final scores, all runs. Source: SPEC section 4 (Atari 100k),
# which computes them from rliable's files (Agarwal et al. 2021,
# gs://rl-benchmark-data/atari_100k); the rliable paper prints no table of
# them and none of the IQM, so the IQM is not asserted against a figure.
@pytest.mark.parametrize('agent, mean, median', [
    ('DER', 0.350, 0.189),
    ('DrQ(eps)', 0.465, 0.313),
    ('SPR', 0.616, 0.396),
])
def test_published_aggregates_are_reproduced(published, human_random, agent,
                                             mean, median):
  matrix = atari100k.normalised_matrix(agent, published[agent], human_random)
  assert matrix.shape == (100, 26)
  assert bootstrap.mean_of_means(matrix) == pytest.approx(mean, abs=5e-4)
  assert bootstrap.median_of_means(matrix) == pytest.approx(median, abs=5e-4)


def test_human_random_scores_are_dopamines(human_random):
  with open(run_data.reference_path('atari100k/dopamine_human_random.csv'),
            newline='') as f:
    dopamine = {r['game']: (float(r['random']), float(r['human']))
                for r in csv.DictReader(f)}
  assert sorted(dopamine) == sorted(atari100k.GAMES)
  for game, scores in dopamine.items():
    assert human_random[game] == scores, game


def test_bootstrap_cis_cover_the_point_and_shrink_with_more_runs(
    published, human_random):
  matrix = atari100k.normalised_matrix('DER', published['DER'], human_random)
  few = atari100k.summarise('DER', matrix[:5], reps=300)
  many = atari100k.summarise('DER', matrix, reps=300)
  assert few.runs_per_game == 5 and many.runs_per_game == 100
  for metric in atari100k.METRICS:
    for summary in (few, many):
      interval = summary.intervals[metric]
      assert interval.lower <= interval.point <= interval.upper, metric
    width = lambda i: i.upper - i.lower
    assert width(many.intervals[metric]) < width(few.intervals[metric]), metric


def test_unequal_runs_use_the_fewest_of_any_game(published, human_random):
  matrix = atari100k.normalised_matrix('BBF', published['BBF'], human_random)
  assert matrix.shape == (52, 26)
  alien = atari100k.GAMES.index('alien')
  np.testing.assert_allclose(
      matrix[:, alien], run_data.human_normalized(
          'alien', published['BBF']['alien'][:52], human_random))


def _write_run(root, agent, game, seed, returns, protocol='atari100k'):
  path = os.path.join(root, agent, game, f'seed_{seed}', 'results.csv')
  os.makedirs(os.path.dirname(path))
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(['agent', 'environment_name', 'seed', 'iteration',
                     'frame', 'eval_episode_return'])
    for iteration, value in enumerate(returns):
      writer.writerow([agent, game, seed, iteration, iteration * 40_000,
                       value])
  run_json.write(path, agent, 'atari', {
      'protocol': protocol, 'num_iterations': 10, 'environment_name': game,
      'seed': seed})


def _fake_runs(root, games=atari100k.GAMES):
  # Two finished seeds per game: final returns 10 * (game index) + seed.
  for i, game in enumerate(games):
    for seed in (1, 2):
      returns = [0.0] * 10 + [10.0 * i + seed]
      _write_run(root, 'cr_dqn', game, seed, returns)
  # Left out: an unfinished run, and a run of another protocol.
  _write_run(root, 'cr_dqn', 'pong', 3, [5.0] * 4)
  _write_run(root, 'cr_dqn', 'alien', 4, [7.0] * 11, protocol='dqn_zoo')
  return run_data.load_run_dir(str(root))


def test_our_runs_per_game_table_and_aggregates(tmp_path, published,
                                                human_random):
  log = io.StringIO()
  ours = atari100k.our_scores(_fake_runs(tmp_path), log=log)
  assert list(ours) == ['cr_dqn']
  assert '1 run(s) left out' in log.getvalue()
  assert '1 unfinished' in log.getvalue()
  np.testing.assert_array_equal(ours['cr_dqn']['alien'], [1.0, 2.0])
  table = atari100k.per_game_markdown(
      {'DER': published['DER'], **ours})
  lines = {line.split(' | ')[0].lstrip('| '): line.split(' | ')
           for line in table.splitlines() if line.startswith('| ')}
  assert lines['game'][1:] == ['DER', 'cr_dqn |']
  for i, game in enumerate(atari100k.GAMES):
    der, mine = lines[game][1], lines[game][2].rstrip(' |')
    assert float(der) == pytest.approx(np.mean(published['DER'][game]),
                                       abs=0.05)
    assert float(mine) == pytest.approx(10.0 * i + 1.5)
  matrix = atari100k.normalised_matrix('cr_dqn', ours['cr_dqn'], human_random)
  assert matrix.shape == (2, 26)
  summary = atari100k.summarise('cr_dqn', matrix, reps=200)
  text = atari100k.aggregate_markdown([summary])
  assert '| cr_dqn | 2 |' in text
  assert summary.intervals['mean'].point == pytest.approx(
      bootstrap.mean_of_means(matrix))


def test_a_missing_game_is_named(tmp_path, human_random):
  ours = atari100k.our_scores(_fake_runs(tmp_path, atari100k.GAMES[:-2]),
                              log=io.StringIO())
  with pytest.raises(ValueError, match='2 of the 26.*seaquest, up_n_down'):
    atari100k.normalised_matrix('cr_dqn', ours['cr_dqn'], human_random)


def test_an_unknown_agent_is_refused():
  with pytest.raises(ValueError, match=r"Unknown published agent.*'Dreamer'"):
    atari100k.load_published(agents=['DER', 'Dreamer'])


def test_runs_of_another_protocol_only_are_refused(tmp_path):
  _write_run(tmp_path, 'cr_dqn', 'pong', 1, [1.0] * 11, protocol='dqn_zoo')
  with pytest.raises(ValueError, match='protocol=atari100k'):
    atari100k.our_scores(run_data.load_run_dir(str(tmp_path)),
                         log=io.StringIO())


def test_gather_keeps_ours_apart_from_the_published(tmp_path):
  _fake_runs(tmp_path)
  scores = atari100k.gather([f'mine={tmp_path}'], ['SPR'])
  assert list(scores) == ['SPR', 'mine/cr_dqn']
  with pytest.raises(ValueError, match='Nothing to aggregate'):
    atari100k.gather([], [])


def test_profile_figure_is_written(tmp_path, published, human_random):
  matrix = atari100k.normalised_matrix('SimPLe', published['SimPLe'],
                                       human_random)
  path = atari100k.plot_profiles(str(tmp_path / 'p.png'), {'SimPLe': matrix},
                                 reps=20)
  with open(path, 'rb') as f:
    assert f.read(8) == b'\x89PNG\r\n\x1a\n'


def _write_preset_run(root, preset, game, final, seed=1):
  """A finished run whose settings are `preset`'s, as run.json records them."""
  p = agent_registry.presets()[preset]
  path = os.path.join(root, preset, p.package, game, f'seed_{seed}',
                      'results.csv')
  os.makedirs(os.path.dirname(path))
  with open(path, 'w', newline='') as f:
    writer = csv.writer(f)
    writer.writerow(['agent', 'environment_name', 'seed', 'iteration',
                     'frame', 'eval_episode_return'])
    for iteration in range(11):
      writer.writerow([p.package, game, seed, iteration, iteration * 40_000,
                       final if iteration == 10 else 0.0])
  run_json.write(path, p.package, 'atari', {
      'protocol': 'atari100k', 'num_iterations': 10, 'environment_name': game,
      'seed': seed, 'head': p.head, 'loss': p.loss,
      'scale_grad': p.scale_grad, 'huber_param': p.huber_param,
      'smoothing_width': p.smoothing_width})


def test_a_pair_on_some_games_is_compared_game_by_game(tmp_path,
                                                        human_random):
  games = ('krull', 'pong', 'boxing')
  finals = {'CR-DQN': (5000.0, -10.0, 30.0), 'QR-DQN-1': (4000.0, -15.0,
                                                           40.0)}
  for preset, values in finals.items():
    for game, final in zip(games, values):
      _write_preset_run(tmp_path, preset, game, final)
  text, matrices = atari100k.report(
      [str(tmp_path)], ['DER'], games, ['CR-DQN', 'QR-DQN-1'], reps=500)
  # Named by preset, aggregated over the three games only, DER included.
  assert sorted(matrices) == ['CR-DQN', 'DER', 'QR-DQN-1']
  assert matrices['DER'].shape == (100, 3)
  assert '3 of the 26 games (krull, pong, boxing)' in text
  assert '| CR-DQN | 1 | ' in text and 'One run a game has no CI' in text
  difference = [run_data.human_normalized(g, a, human_random)
                - run_data.human_normalized(g, b, human_random)
                for g, a, b in zip(games, *finals.values())]
  krull = [run_data.human_normalized('krull', finals[p][0], human_random)
           for p in finals]
  assert (f'| krull | {krull[0]:.3f} | {krull[1]:.3f} | {difference[0]:+.3f} |'
          in text)
  assert (f'Mean difference over 3 of the 26 games (krull, pong, boxing): '
          f'{np.mean(difference):+.3f} [95% bootstrap CI over games: ') in text
  assert 'CR-DQN higher on 2 of 3, lower on 1.' in text


def test_bad_games_pairs_and_duplicate_runs_are_refused(tmp_path):
  _write_preset_run(tmp_path, 'CR-DQN', 'krull', 1.0)
  with pytest.raises(ValueError, match='distinct Atari 100k games.*alien'):
    atari100k.report([str(tmp_path)], [], ['krull', 'tetris'])
  with pytest.raises(ValueError, match='distinct'):
    atari100k.report([str(tmp_path)], [], ['krull', 'krull'])
  with pytest.raises(ValueError, match='two agents'):
    atari100k.report([str(tmp_path)], [], ['krull'], ['CR-DQN'])
  with pytest.raises(ValueError, match="no agent 'IQN'.*CR-DQN"):
    atari100k.report([str(tmp_path)], [], ['krull'], ['CR-DQN', 'IQN'])
  with pytest.raises(ValueError, match='CR-DQN has no score for 1 of the 2.*'
                     r'pong.*--games'):
    atari100k.report([str(tmp_path)], [], ['krull', 'pong'])
  copy = tmp_path / 'copy'
  _write_preset_run(copy, 'CR-DQN', 'krull', 2.0)
  with pytest.raises(ValueError,
                     match='Two runs claim agent=CR-DQN game=krull seed=1'):
    atari100k.report([str(tmp_path / 'CR-DQN'), str(copy / 'CR-DQN')], [],
                     ['krull'])


def test_presets_of_one_package_are_told_apart(tmp_path):
  _write_preset_run(tmp_path, 'IQN', 'pong', -20.0)
  _write_preset_run(tmp_path, 'CR-IQN', 'pong', -18.0)
  scores = atari100k.gather([str(tmp_path)], [])
  assert {name: list(s['pong']) for name, s in scores.items()} == {
      'IQN': [-20.0], 'CR-IQN': [-18.0]}
