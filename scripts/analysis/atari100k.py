r"""Atari 100k: the published agents' scores and ours, aggregated as rliable does.

  python -m scripts.analysis.atari100k
  python -m scripts.analysis.atari100k --runs=runs/a100k --profile_png=p.png

Human-normalises the published per-run scores (zoo/reference/atari100k/) and
our runs of --protocol=atari100k (a run's score: its final evaluation return);
prints per agent the mean, median, IQM and optimality gap with
stratified-bootstrap CIs, then each agent's mean raw score per game. --games
restricts every agent to those games; --pair=A,B adds A - B per game and over
the games. docs/atari100k.md says which runs count and how.
"""

import collections
import dataclasses
import sys
from typing import Dict, Mapping, Optional, Sequence, Tuple

from absl import flags
import numpy as np

from scripts.analysis import bootstrap
from scripts.analysis import run_data
from scripts.analysis import tables
from zoo.configuration import cli

FLAGS = flags.FLAGS

# The 26 games, in the project's (DQN Zoo's) names.
GAMES = ('alien', 'amidar', 'assault', 'asterix', 'bank_heist', 'battle_zone',
         'boxing', 'breakout', 'chopper_command', 'crazy_climber',
         'demon_attack', 'freeway', 'frostbite', 'gopher', 'hero', 'jamesbond',
         'kangaroo', 'krull', 'kung_fu_master', 'ms_pacman', 'pong',
         'private_eye', 'qbert', 'road_runner', 'seaquest', 'up_n_down')
SCORES_FILE = 'atari100k/scores.csv.gz'
# The published agents, in the order the tables show them.
PUBLISHED_AGENTS = ('SimPLe', 'DER', 'OTRainbow', 'CURL', 'DrQ', 'DrQ(eps)',
                    'SPR', 'BBF')
METRICS = ('mean', 'median', 'iqm', 'optimality_gap')
# How run.json marks a run of this protocol (the --protocol setting).
SUITE, PROTOCOL_SETTING, PROTOCOL = 'atari', 'protocol', 'atari100k'
# rliable's performance-profile thresholds and band resamples.
PROFILE_TAUS = np.linspace(0.0, 2.0, 201)

# Per agent, per game: the scores of its runs, lowest run identifier first.
Scores = Dict[str, Dict[str, np.ndarray]]


def define_flags() -> None:
  """Define the flags of this entry point (only when run as a program)."""
  flags.DEFINE_multi_string(
      'runs', [], 'Our Atari 100k runs: a directory tree of run CSVs, as DIR '
      'or LABEL=DIR (LABEL prefixes the agent names). Repeatable.')
  flags.DEFINE_list('agents', list(PUBLISHED_AGENTS),
                    'Published agents to show (empty: none).')
  flags.DEFINE_list('games', list(GAMES), 'Games to aggregate over (default: '
                    'the 26).')
  flags.DEFINE_list('pair', [], 'A,B: two agents to compare game by game '
                    '(e.g. CR-DQN,QR-DQN-1).')
  flags.DEFINE_integer('bootstrap_reps', 50_000,
                       'Bootstrap resamples (rliable default 50000).')
  flags.DEFINE_float('confidence', 0.95, 'CI coverage.')
  flags.DEFINE_integer('seed', 0, 'Seed of the bootstrap.')
  flags.DEFINE_string('profile_png', None, 'Also draw the performance '
                      'profiles (fraction of runs with score > tau) here.')
  flags.DEFINE_integer('profile_reps', 2_000,
                       'Bootstrap resamples of the profile bands.')


def load_published(path: Optional[str] = None,
                   agents: Optional[Sequence[str]] = None) -> Scores:
  """Return the published scores {agent: {game: [runs]}} of `agents` (all)."""
  path = path or run_data.reference_path(SCORES_FILE)
  rows = collections.defaultdict(list)
  for row in run_data.read_rows(path, ('agent', 'game', 'run', 'score')):
    rows[(row['agent'], row['game'])].append(
        (int(row['run']), float(row['score'])))
  known = sorted({agent for agent, _ in rows})
  wanted = known if agents is None else list(agents)
  unknown = [a for a in wanted if a not in known]
  if unknown:
    raise ValueError(f'Unknown published agent(s) {unknown}; the Atari 100k '
                     f'file has {known}.')
  return {agent: {game: np.array([s for _, s in sorted(runs)])
                  for (a, game), runs in rows.items() if a == agent}
          for agent in wanted}


def our_scores(runs: Sequence[run_data.Run], log=None) -> Scores:
  """Return {agent: {game: [final scores]}} of our Atari 100k runs.

  An agent's name is the preset its settings match (else its package),
  prefixed with the --runs LABEL if one was given. Runs of another protocol,
  and unfinished runs, are left out (said on `log`, stderr by default).
  """
  log = log or sys.stderr
  grouped = collections.defaultdict(lambda: collections.defaultdict(list))
  others = unfinished = 0
  for run in runs:
    settings = run.settings or {}
    if run.suite != SUITE or settings.get(PROTOCOL_SETTING) != PROTOCOL:
      others += 1
      continue
    # The final iteration is the protocol's last: run.json's num_iterations.
    score = run.value_at(int(settings['num_iterations']))
    if score is None:
      unfinished += 1
      continue
    name = run.agent if run.source == 'ours' else f'{run.source}/{run.agent}'
    grouped[name][run.game].append((run.seed, score))
  if others:
    print(f'note: {others} run(s) left out: their run.json does not record '
          f'suite={SUITE} and {PROTOCOL_SETTING}={PROTOCOL}.', file=log)
  if unfinished:
    print(f'note: {unfinished} unfinished Atari 100k run(s) left out (no '
          'final-iteration evaluation).', file=log)
  if not grouped:
    raise ValueError(
        f'None of the {len(runs)} run(s) is a finished Atari 100k run: pass '
        'the runs of --protocol=atari100k (their run.json records '
        f'{PROTOCOL_SETTING}={PROTOCOL}).')
  return {name: {game: np.array([s for _, s in sorted(found)])
                 for game, found in games.items()}
          for name, games in grouped.items()}


def check_games(games: Sequence[str]) -> Tuple[str, ...]:
  """Return `games` if they are distinct Atari 100k games; else ValueError."""
  unknown = [g for g in games if g not in GAMES]
  if unknown or not games or len(set(games)) != len(games):
    raise ValueError(f'--games must name distinct Atari 100k games, got '
                     f'{list(games)}; the games are {", ".join(GAMES)}.')
  return tuple(games)


def normalised_matrix(agent: str, per_game: Mapping[str, np.ndarray],
                      human_random, games: Sequence[str] = GAMES
                      ) -> np.ndarray:
  """Return the human-normalised [runs, games] matrix of one agent.

  Every game must have runs; each game gives its first n runs, n the fewest
  any game has, so that the stratified bootstrap sees a full matrix.
  """
  missing = [g for g in games if not len(per_game.get(g, ()))]
  if missing:
    raise ValueError(
        f'{agent} has no score for {len(missing)} of the {len(games)} games '
        f'aggregated: {", ".join(missing)}. Run those games, leave the agent '
        'out, or pass --games=... (the games it has).')
  runs = min(len(per_game[g]) for g in games)
  return np.stack([run_data.human_normalized(g, per_game[g][:runs],
                                             human_random) for g in games], -1)


@dataclasses.dataclass
class Summary:
  """One agent's aggregates: fractions of human (1 = human level)."""
  agent: str
  runs_per_game: int
  intervals: Dict[str, bootstrap.Interval]


def summarise(agent: str, matrix: np.ndarray, reps: int = 50_000,
              confidence: float = 0.95, seed: int = 0) -> Summary:
  """Return the four aggregates of a [runs, games] matrix with their CIs."""
  return Summary(agent, matrix.shape[0], {
      name: bootstrap.confidence_interval(
          matrix, bootstrap.AGGREGATES[name], reps=reps,
          confidence=confidence, seed=seed) for name in METRICS})


def _games_text(games: Sequence[str]) -> str:
  if tuple(games) == GAMES:
    return 'the 26 games'
  return f'{len(games)} of the 26 games ({", ".join(games)})'


def aggregate_markdown(summaries: Sequence[Summary],
                       confidence: float = 0.95,
                       games: Sequence[str] = GAMES) -> str:
  """Return the markdown table of the aggregates."""
  pct = int(round(100 * confidence))
  lines = [f'Human-normalised score over {_games_text(games)}, point '
           f'[{pct}% stratified-bootstrap CI]; optimality gap: lower is '
           'better.', '']
  lines += tables.markdown(
      ['agent', 'runs/game'] + list(METRICS),
      [[s.agent, s.runs_per_game] +
       [bootstrap.interval_text(*(i if s.runs_per_game > 1 else i[:1]),
                                digits=3)
        for i in (s.intervals[m] for m in METRICS)] for s in summaries], 'lr')
  if any(s.runs_per_game < 2 for s in summaries):
    lines += ['', 'One run a game has no CI: the stratified bootstrap '
              'resamples runs within each game.']
  return '\n'.join(lines) + '\n'


def per_game_markdown(scores: Scores, games: Sequence[str] = GAMES) -> str:
  """Return the markdown table of each agent's mean raw score per game."""
  agents = list(scores)
  lines = ['Mean final evaluation return per game (all runs of each agent).',
           ''] + tables.markdown(
               ['game'] + agents,
               [[game] + [f'{np.mean(scores[a][game]):.1f}'
                          if len(scores[a].get(game, ())) else '–'
                          for a in agents] for game in games],
               'l' + 'r' * len(agents))
  return '\n'.join(lines) + '\n'


def pair_markdown(a: str, b: str, matrices: Mapping[str, np.ndarray],
                  games: Sequence[str], reps: int = 50_000,
                  confidence: float = 0.95, seed: int = 0) -> str:
  """Return A against B: per game and over the games, normalised scores."""
  mean_a, mean_b = matrices[a].mean(0), matrices[b].mean(0)
  difference = mean_a - mean_b
  pct = int(round(100 * confidence))
  rows = [[g, f'{x:.3f}', f'{y:.3f}', f'{d:+.3f}']
          for g, x, y, d in zip(games, mean_a, mean_b, difference)]
  lines = [f'{a} against {b}: human-normalised score per game (mean of '
           f'{matrices[a].shape[0]} and {matrices[b].shape[0]} run(s) a '
           'game).', ''] + tables.markdown(
               ['game', a, b, f'{a} - {b}'], rows, 'lrrr')
  cell = bootstrap.mean_with_ci(difference, reps, confidence, seed)
  ci = (f' [{pct}% bootstrap CI over games: {cell.lower:+.3f}, '
        f'{cell.upper:+.3f}]' if len(games) > 1 else '')
  lines += ['', f'Mean difference over {_games_text(games)}: '
            f'{cell.mean:+.3f}{ci}; {a} higher on '
            f'{int(np.sum(difference > 0))} of {len(games)}, lower on '
            f'{int(np.sum(difference < 0))}.']
  return '\n'.join(lines) + '\n'


def plot_profiles(path: str, matrices: Mapping[str, np.ndarray],
                  reps: int = 2_000, confidence: float = 0.95,
                  seed: int = 0) -> str:
  """Draw each agent's performance profile with its bootstrap band; return path."""
  from scripts.analysis import plot_curves  # pylint: disable=g-import-not-at-top
  fig, (ax,) = plot_curves.panels(1, 1, 7, 4.5)
  for i, (agent, matrix) in enumerate(matrices.items()):
    plot_curves.band(ax, PROFILE_TAUS, *bootstrap.profile_band(
        matrix, PROFILE_TAUS, reps=reps, confidence=confidence, seed=seed),
                     color=plot_curves.color(i), label=agent)
  ax.set_xlabel(r'Human-normalised score ($\tau$)')
  ax.set_ylabel(r'Fraction of runs with score > $\tau$')
  ax.set_title('Atari 100k: score distributions '
               f'({int(round(100 * confidence))}% bands)')
  ax.grid(alpha=0.3)
  ax.legend()
  fig.tight_layout()
  return plot_curves.save(fig, path)[0]


def gather(runs_args: Sequence[str], agents: Sequence[str]) -> Scores:
  """Return the published `agents`' scores, then ours from --runs."""
  scores = load_published(agents=agents) if agents else {}
  runs = run_data.check_unique(run_data.load_runs_args(runs_args))
  if runs:
    ours = our_scores(runs)
    clash = sorted(set(ours) & set(scores))
    if clash:
      raise ValueError(f'Our agent(s) {clash} have a published agent\'s name; '
                       'pass --runs=LABEL=DIR to tell them apart.')
    scores.update(ours)
  if not scores:
    raise ValueError('Nothing to aggregate: pass --runs=DIR or keep some '
                     '--agents.')
  return scores


def report(runs_args: Sequence[str], agents: Sequence[str],
           games: Sequence[str] = GAMES, pair: Sequence[str] = (),
           reps: int = 50_000, confidence: float = 0.95, seed: int = 0,
           ) -> Tuple[str, Dict[str, np.ndarray]]:
  """Return the report's markdown and each agent's [runs, games] matrix.

  Every input is checked (ValueError naming the fix) before the bootstrap.
  """
  games = check_games(games)
  if pair and len(pair) != 2:
    raise ValueError(f'--pair takes two agents, A,B; got {list(pair)}.')
  scores = gather(runs_args, [a for a in agents if a])
  human_random = run_data.load_human_random()
  matrices = {agent: normalised_matrix(agent, per_game, human_random, games)
              for agent, per_game in scores.items()}
  for agent in pair:
    if agent not in matrices:
      raise ValueError(f'--pair: no agent {agent!r}; the agents are '
                       f'{", ".join(matrices)}.')
  summaries = [summarise(agent, matrix, reps, confidence, seed)
               for agent, matrix in matrices.items()]
  parts = [aggregate_markdown(summaries, confidence, games),
           per_game_markdown(scores, games)]
  if pair:
    parts.append(pair_markdown(*pair, matrices, games, reps, confidence,
                               seed))
  return '\n'.join(parts), matrices


def main(unused_argv):
  try:
    text, matrices = report(FLAGS.runs, FLAGS.agents, FLAGS.games, FLAGS.pair,
                            FLAGS.bootstrap_reps, FLAGS.confidence, FLAGS.seed)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  print(text)
  if FLAGS.profile_png:
    path = plot_profiles(FLAGS.profile_png, matrices, FLAGS.profile_reps,
                         FLAGS.confidence, FLAGS.seed)
    print(f'wrote {path}', file=sys.stderr)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
