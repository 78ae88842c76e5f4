"""The campaigns make the runs the recipes they replace made, and read files."""

import json
import os

import numpy as np
import pytest

from scripts.analysis import atari100k
from scripts.analysis import run_data
from scripts.campaign import campaigns
from scripts.campaign import run_record as run_lib

FIXTURES = os.path.join(os.path.dirname(__file__), 'data', 'campaigns')
ROOT, PYTHON = '/data/runs', 'PYTHON'
# Fixture (recorded from the launchers before) -> the campaign replacing it.
SAME_COMMANDS = {'atari57': 'atari57', 'atari57_variants': 'atari57_variants',
                 'minatar_sweep': 'minatar', 'minatar_study': 'minatar_study',
                 'minatar_study_jitted': 'minatar_study_jitted'}


def recorded(fixture):
  with open(os.path.join(FIXTURES, fixture + '.json')) as f:
    return json.load(f)['commands']


def commands(name):
  return [run.command(ROOT, PYTHON)
          for run in campaigns.expand(campaigns.load(name))]


@pytest.mark.parametrize('fixture', sorted(SAME_COMMANDS))
def test_each_recipe_makes_its_recorded_commands_in_order(fixture):
  runs = campaigns.expand(campaigns.load(SAME_COMMANDS[fixture]))
  want = recorded(fixture)
  got = [run.command(ROOT, PYTHON) for run in runs]
  assert len(got) == len(want)
  for run, command, entry in zip(runs, got, want):
    argv = entry['argv'] if isinstance(entry, dict) else entry
    assert command == [PYTHON] + [a.replace('{root}', ROOT) for a in argv]
    if isinstance(entry, dict):
      assert run.label == entry['label']


def _flags(argv, run):
  """Return {flag: value} of a command, its folder templates filled."""
  out = {}
  for arg in argv[2:]:
    name, _, value = arg.partition('=')
    value = value.replace('{agent}', run.agent).replace(
        '{environment_name}', run.game)
    if len(run.seeds) == 1:
      value = value.replace('seed_{seed}', f'seed_{run.seeds[0]}')
    out[name] = value
  return out


def test_the_evidence_plan_keeps_its_runs_with_checkpoints_now():
  runs = campaigns.expand(campaigns.load('evidence'))
  want = recorded('evidence')
  assert len(runs) == len(want) == 49
  for run, entry in zip(runs, want):
    argv = [a.replace('=runs/', f'={ROOT}/evidence/') for a in entry['argv']]
    got = _flags(run.command(ROOT, PYTHON)[1:], run)
    recorded_flags = _flags(argv, run)
    # The one change: a run cut by its deadline keeps its checkpoint.
    assert recorded_flags.pop('--checkpoint_dir') == ''
    assert got.pop('--checkpoint_dir') == os.path.join(
        os.path.dirname(got['--results_csv_path']), 'checkpoints')
    assert argv[1] == f'{run.agent}.run_{run.suite}'
    assert got == recorded_flags
    assert run.group == f'evidence/{entry["piece"]}/{entry["label"]}'


def test_atari100k_is_520_runs_of_the_protocol():
  runs = campaigns.expand(campaigns.load('atari100k'))
  assert len(runs) == 520
  assert {(r.label, r.agent) for r in runs} == {
      ('QR-DQN-1', 'qr_dqn'), ('CR-DQN', 'cr_dqn'), ('IQN', 'iqn'),
      ('CR-IQN', 'iqn')}
  assert len({r.game for r in runs}) == 26
  assert sorted({r.seeds for r in runs}) == [(s,) for s in range(1, 6)]
  assert all(r.flag('protocol') == 'atari100k' for r in runs)
  assert all(r.num_iterations() == 10 for r in runs)
  assert [r.seeds[0] for r in runs] == sorted(r.seeds[0] for r in runs)
  cr_iqn = [r for r in runs if r.label == 'CR-IQN'][0]
  assert '--preset=CR-IQN' in cr_iqn.flags
  assert cr_iqn.seed_dirs(ROOT)[0].startswith(f'{ROOT}/atari100k/CR-IQN/iqn/')


def test_atari100k_pairs_are_the_big_campaigns_runs_on_ders_best_games():
  runs = campaigns.expand(campaigns.load('atari100k_pairs'))
  assert [(r.game, r.label) for r in runs[:2]] == [
      ('krull', 'CR-DQN'), ('krull', 'QR-DQN-1')]
  games = campaigns.ATARI100K_PAIR_GAMES
  assert len(games) >= 8 and len(runs) == 2 * len(games)
  assert {r.seeds for r in runs} == {(1,)}
  everything = {r.name: r for r in campaigns.expand(
      campaigns.load('atari100k'))}
  assert all(everything[r.name] == r for r in runs)
  # The games: DER's highest mean human-normalised scores, highest first.
  der = atari100k.load_published(agents=['DER'])['DER']
  random_human = run_data.load_human_random()  # Dopamine's, on the 26.
  normalised = {g: (np.mean(der[g]) - random_human[g][0])
                / (random_human[g][1] - random_human[g][0]) for g in der}
  best = sorted(normalised, key=normalised.get, reverse=True)
  assert list(games) == best[:len(games)]


def test_a_users_file_is_a_campaign(tmp_path):
  path = tmp_path / 'mine.json'
  path.write_text(json.dumps({'suite': 'minatar',
                              'flags': ['--num_iterations=2'],
                              'blocks': [{'agent': 'cr_dqn',
                                          'games': ['breakout', 'asterix'],
                                          'seeds': [4, 5]}]}))
  runs = campaigns.expand(campaigns.load(str(path)))
  assert [(r.game, r.seeds) for r in runs] == [
      ('breakout', (4,)), ('breakout', (5,)), ('asterix', (4,)),
      ('asterix', (5,))]
  assert runs[0].num_iterations() == 2


@pytest.mark.parametrize('campaign, message', [
    ({'blocks': [{'games': ['pong']}]}, 'needs "agent"'),
    ({'blocks': [{'agent': 'cr_dqn', 'games': ['pong'], 'seed': [1]}]},
     'may have'),
    ({'blocks': [{'agent': 'cr_dqn', 'games': 'pong'}]}, '"games" must be'),
    ({'blocks': [{'agent': 'cr_dqn', 'games': ['pong']}] * 2}, 'share a'),
    ({'blocks': [{'agent': 'cr_dqn', 'games': ['pong'], 'seeds': [1, 2],
                  'suite': 'minatar'}]}, 'game'),
    ({'order': 'game', 'blocks': [{'agent': 'cr_dqn', 'games': ['pong']}]},
     '"order"'),
])
def test_bad_campaigns_name_the_fix(campaign, message):
  with pytest.raises(ValueError, match=message):
    campaigns.expand(campaign)


def test_unknown_names_and_unreadable_files_name_the_fix(tmp_path):
  with pytest.raises(ValueError, match='atari100k'):
    campaigns.load('atari1000k')
  with pytest.raises(ValueError, match='Cannot read'):
    campaigns.load(str(tmp_path / 'missing.json'))


def test_several_seeds_need_the_jitted_loop():
  with pytest.raises(ValueError, match='jitted'):
    run_lib.Run('cr_dqn', 'minatar', 'breakout', (1, 2))
