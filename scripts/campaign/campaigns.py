"""Campaigns as data: the project's recipes, and a user's JSON file.

A campaign is a dict of plain values (a JSON file holds the same):

  {"description": "...", "suite": "atari", "flags": ["--num_envs=64"],
   "order": "blocks",
   "blocks": [{"agent": "qr_dqn", "preset": "QR-DQN-0", "games": "all",
               "seeds": [1, 2, 3], "group": "QR-DQN-0"}]}

Each block is one agent (and preset) on its games x seeds: one run per game
and seed, in that order, or one run per game with the seeds vmapped
("jitted": true). A run's flags are the campaign's, then --preset, then the
block's. "games" is a list, "all" (the suite's) or "atari100k" (the 26
games of the Atari 100k benchmark). "order": "seed" runs the first seed of
every block first, so that a campaign stopped early holds whole seeds.
"""

import json
import os
from typing import Any, Dict, List

from scripts.campaign import run_record as run_lib

BLOCK_KEYS = ('agent', 'preset', 'games', 'seeds', 'flags', 'group',
              'jitted', 'suite', 'label')
CAMPAIGN_KEYS = ('description', 'suite', 'flags', 'order', 'blocks')

# The MinAtar study's configurations: preset -> its package.
STUDY = {'QR-DQN-1': 'qr_dqn', 'QR-DQN-0': 'qr_dqn', 'CR-DQN': 'cr_dqn',
         'NC-CR-DQN': 'nc_cr_dqn', 'NC-QR-DQN-0': 'nc_qr_dqn'}
MINATAR_GAMES = ('asterix', 'breakout', 'freeway', 'seaquest',
                 'space_invaders')
PAPER_VARIANTS = {'QR-DQN-0': 'qr_dqn', 'NC-CR-DQN': 'nc_cr_dqn',
                  'NC-QR-DQN-1': 'nc_qr_dqn', 'NC-QR-DQN-0': 'nc_qr_dqn'}
ATARI100K_AGENTS = {'QR-DQN-1': 'qr_dqn', 'CR-DQN': 'cr_dqn', 'IQN': 'iqn',
                    'CR-IQN': 'iqn'}
# QR-DQN-1 against CR-DQN at a CPU's cost: the Atari 100k games where DER
# has the highest mean human-normalised score (zoo/reference/atari100k/),
# where a data-efficient agent has the most room to show, highest first.
ATARI100K_PAIR_GAMES = ('krull', 'road_runner', 'crazy_climber', 'jamesbond',
                        'freeway', 'assault', 'pong', 'kung_fu_master',
                        'demon_attack')
# Presets beyond the paper's, each with its MinAtar runs.
LATER_PRESETS = {'CR-DQN-MQ': 'cr_dqn', 'CR-IQN': 'iqn', 'IQN': 'iqn',
                 'NC-QR-DQN-1': 'nc_qr_dqn'}


def study_flags(iterations: int, steps: int = 100_000,
                eval_steps: int = 25_000) -> List[str]:
  """MinAtar study length; ε from 1 to 0.1 over the first 100k steps."""
  return [f'--num_iterations={iterations}', f'--num_train_frames={steps}',
          f'--num_eval_frames={eval_steps}',
          '--exploration_epsilon_decay_frame_fraction='
          f'{min(100_000 / (iterations * steps), 1.0)!r}']


def _study(jitted: bool) -> Dict[str, Any]:
  games = MINATAR_GAMES if jitted else ('asterix', 'breakout', 'seaquest')
  seeds = list(range(1, 11)) if jitted else [1, 2, 3]
  name = 'minatar_jitted' if jitted else 'minatar_study'  # Its folder.
  blocks = [dict(agent=agent, preset=preset, games=[game], seeds=seeds,
                 group=f'{name}/{preset}', jitted=jitted)
            for game in games for preset, agent in STUDY.items()]
  if not jitted:  # The K-stream check: K = 8 beside K = 1 on one game.
    blocks.append(dict(agent='cr_dqn', preset='CR-DQN', games=['breakout'],
                       seeds=seeds, flags=['--num_envs=8'],
                       group=f'{name}/CR-DQN-K8', label='CR-DQN-K8'))
  return dict(
      description=('The MinAtar study: five configurations x '
                   f'{len(games)} games x {len(seeds)} seeds'
                   + (', seeds vmapped (--loop=jitted), 5M steps' if jitted
                      else ', 500k steps, and CR-DQN K = 8 on breakout')),
      suite='minatar', flags=study_flags(50 if jitted else 5),
      order='blocks' if jitted else 'seed', blocks=blocks)


def _evidence() -> Dict[str, Any]:
  minatar = study_flags(5) + ['--tensorboard_dir=']
  atari = ['--num_iterations=1', '--num_train_frames=1000000',
           '--num_eval_frames=500000',
           '--exploration_epsilon_decay_frame_fraction=4.0',
           '--tensorboard_dir=', '--environment_mode=vector', '--num_envs=64']
  def pieces(prefix, presets):
    return [dict(agent=agent, preset=preset, games=[game],
                 seeds=list(range(1, 11)), flags=minatar, suite='minatar',
                 jitted=True, group=f'evidence/{prefix}-{game}/{preset}')
            for game in MINATAR_GAMES for preset, agent in presets.items()]
  def atari_piece(game):
    return dict(agent='cr_dqn', preset='CR-DQN', games=[game], seeds=[1],
                flags=atari, group=f'evidence/atari-cr-dqn-{game}/CR-DQN')
  others = {p: STUDY[p] for p in ('QR-DQN-0', 'NC-CR-DQN', 'NC-QR-DQN-0')}
  blocks = (pieces('minatar-cr-vs-qr1', {'CR-DQN': 'cr_dqn',
                                         'QR-DQN-1': 'qr_dqn'})
            + [atari_piece('breakout')]
            + pieces('minatar-others', others)
            + [atari_piece(g) for g in ('asterix', 'seaquest', 'frostbite')])
  for preset, agent in LATER_PRESETS.items():
    blocks += pieces(f'minatar-{preset.lower()}', {preset: agent})
  return dict(description=(
      'Evidence in order of value: MinAtar CR-DQN vs QR-DQN-1 (10 seeds '
      'vmapped, 500k steps), one Atari iteration of CR-DQN per game, the '
      "other presets' MinAtar runs"), suite='atari', blocks=blocks)


CAMPAIGNS = {
    'atari57': dict(
        description="The paper's table: CR-DQN, 57 Atari games x 3 seeds.",
        suite='atari', blocks=[dict(agent='cr_dqn', games='all',
                                    seeds=[1, 2, 3], group='atari57')]),
    'atari57_variants': dict(
        description="The paper's variants: 4 games x 3 seeds each.",
        suite='atari', blocks=[
            dict(agent=agent, preset=preset, seeds=[1, 2, 3], group=preset,
                 games=['asterix', 'breakout', 'frostbite', 'seaquest'])
            for preset, agent in PAPER_VARIANTS.items()]),
    'atari100k': dict(
        description=('Atari 100k: 26 games x QR-DQN-1, CR-DQN, IQN, CR-IQN '
                     'x 5 seeds, --protocol=atari100k.'),
        suite='atari', flags=['--protocol=atari100k'], order='seed', blocks=[
            dict(agent=agent, preset=preset, games='atari100k',
                 seeds=[1, 2, 3, 4, 5], group=f'atari100k/{preset}')
            for preset, agent in ATARI100K_AGENTS.items()]),
    'atari100k_pairs': dict(
        description=('Atari 100k, CR-DQN against QR-DQN-1: seed 1 on the '
                     f'{len(ATARI100K_PAIR_GAMES)} games of DER\'s highest '
                     'scores, game by game; its runs are the atari100k '
                     'campaign\'s.'),
        suite='atari', flags=['--protocol=atari100k'], blocks=[
            dict(agent=ATARI100K_AGENTS[preset], preset=preset, games=[game],
                 seeds=[1], group=f'atari100k/{preset}')
            for game in ATARI100K_PAIR_GAMES
            for preset in ('CR-DQN', 'QR-DQN-1')]),
    'minatar': dict(
        description='CR-DQN on the five MinAtar games x 3 seeds.',
        suite='minatar', blocks=[dict(agent='cr_dqn', games='all',
                                      seeds=[1, 2, 3], group='minatar')]),
    'minatar_study': _study(jitted=False),
    'minatar_study_jitted': _study(jitted=True),
    'evidence': _evidence(),
}


def _games(suite: str, games) -> List[str]:
  # pylint: disable=g-import-not-at-top
  if games == 'atari100k':
    from scripts.analysis import atari100k
    return list(atari100k.GAMES)
  if suite == 'minatar':
    from zoo.environments import minatar_env as env
  else:
    from zoo.environments import atari_data as env
  if games == 'all':
    return list(env.GAMES)
  if isinstance(games, str) or not games:
    raise ValueError(f'"games" must be a list, "all" or "atari100k", got '
                     f'{games!r}.')
  return [env.check_game(g) for g in games]


def load(name_or_path: str) -> Dict[str, Any]:
  """Return a campaign by name, or read from a JSON file."""
  if name_or_path in CAMPAIGNS:
    return CAMPAIGNS[name_or_path]
  if not name_or_path.endswith('.json'):
    raise ValueError(f'Unknown campaign {name_or_path!r}; name one of '
                     f'{", ".join(CAMPAIGNS)} or a .json file.')
  try:
    with open(name_or_path) as f:
      return json.load(f)
  except (OSError, ValueError) as e:
    raise ValueError(f'Cannot read the campaign file {name_or_path!r}: '
                     f'{e}.') from None


def expand(campaign: Dict[str, Any]) -> List[run_lib.Run]:
  """Return the campaign's runs, in order; ValueError naming the fix."""
  unknown = set(campaign) - set(CAMPAIGN_KEYS)
  if unknown or not campaign.get('blocks'):
    raise ValueError(f'A campaign has "blocks" and may have '
                     f'{", ".join(CAMPAIGN_KEYS)}; got {sorted(campaign)}.')
  runs = []
  for i, block in enumerate(campaign['blocks']):
    unknown = set(block) - set(BLOCK_KEYS)
    if unknown or 'agent' not in block:
      raise ValueError(f'Block {i}: it needs "agent" and may have '
                       f'{", ".join(BLOCK_KEYS)}; got {sorted(block)}.')
    suite = block.get('suite', campaign.get('suite', 'atari'))
    preset = block.get('preset')
    flags = (list(campaign.get('flags', ())) +
             ([f'--preset={preset}'] if preset else []) +
             list(block.get('flags', ())))
    seeds = tuple(int(s) for s in block.get('seeds', [1]))
    jitted = bool(block.get('jitted', False))
    for game in _games(suite, block.get('games')):
      for seeds_of_run in [seeds] if jitted else [(s,) for s in seeds]:
        runs.append(run_lib.Run(
            block['agent'], suite, game, seeds_of_run, tuple(flags),
            block.get('group', ''), jitted,
            block.get('label', preset or block['agent'])))
  if campaign.get('order', 'blocks') == 'seed':
    runs.sort(key=lambda r: r.seeds[0])
  elif campaign.get('order', 'blocks') != 'blocks':
    raise ValueError(f'"order" is "blocks" or "seed", got '
                     f'{campaign["order"]!r}.')
  names = [r.name for r in runs]
  twice = sorted({n for n in names if names.count(n) > 1})
  if twice:
    raise ValueError(f'Two runs would share a folder: {twice[:3]}; give '
                     'their blocks different "group"s.')
  return runs
