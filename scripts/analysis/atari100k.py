r"""Atari 100k: the published agents' scores and ours, aggregated as rliable does.

  python -m scripts.analysis.atari100k
  python -m scripts.analysis.atari100k --runs=runs/a100k --profile_png=p.png

The published per-run final scores (zoo/reference/atari100k/, with their
sources) and our runs of the Atari 100k protocol are human-normalised over the
26 games; per agent, prints the mean, median (over games of the per-game mean
over runs), IQM (25%-trimmed mean over all runs and games) and optimality gap
(mean of max(0, 1 - score)), each with a stratified-bootstrap percentile CI
(scripts.analysis.bootstrap), then the mean raw score per game of every agent.
The score of one of our runs is its final iteration's evaluation return. Our
runs are those whose run.json records the Atari suite and the atari100k
protocol; an agent uses the same number of runs on every game (the fewest it
has on any game, lowest run identifiers first).
"""

import collections
import csv
import dataclasses
import gzip
import sys
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from absl import app
from absl import flags
import numpy as np

from scripts.analysis import bootstrap
from scripts.analysis import run_data
from scripts.analysis import tables
from zoo.configuration import cli
from zoo.storage import run_json

FLAGS = flags.FLAGS

# The 26 games, in the project's (DQN Zoo's) names.
GAMES = ('alien', 'amidar', 'assault', 'asterix', 'bank_heist', 'battle_zone',
         'boxing', 'breakout', 'chopper_command', 'crazy_climber',
         'demon_attack', 'freeway', 'frostbite', 'gopher', 'hero', 'jamesbond',
         'kangaroo', 'krull', 'kung_fu_master', 'ms_pacman', 'pong',
         'private_eye', 'qbert', 'road_runner', 'seaquest', 'up_n_down')
SCORES_FILE = 'atari100k/scores.csv.gz'
DOPAMINE_HUMAN_RANDOM_FILE = 'atari100k/dopamine_human_random.csv'
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
  with gzip.open(path, 'rt', newline='') as f:
    for row in csv.DictReader(f):
      rows[(row['agent'], row['game'])].append(
          (int(row['run']), float(row['score'])))
  known = sorted({agent for agent, _ in rows})
  wanted = known if agents is None else list(agents)
  unknown = [a for a in wanted if a not in known]
  if unknown:
    raise ValueError(f'Unknown published agent(s) {unknown}; the Atari 100k '
                     f'file has {known}.')
  scores: Scores = {}
  for agent in wanted:
    scores[agent] = {game: np.array([s for _, s in sorted(runs)])
                     for (a, game), runs in rows.items() if a == agent}
  return scores


def load_dopamine_human_random(path: Optional[str] = None
                               ) -> Dict[str, Tuple[float, float]]:
  """Return {game: (random, human)} of Dopamine's labs/atari_100k values."""
  path = path or run_data.reference_path(DOPAMINE_HUMAN_RANDOM_FILE)
  with open(path, newline='') as f:
    return {row['game']: (float(row['random']), float(row['human']))
            for row in csv.DictReader(f)}


def atari100k_settings(run: run_data.Run) -> Optional[Dict]:
  """Return the settings of run.json beside `run` if it records this protocol."""
  data = run_json.read(run_json.path_next_to(run.path))
  if (data is None or data.get('suite') != SUITE or
      data['settings'].get(PROTOCOL_SETTING) != PROTOCOL):
    return None
  return data['settings']


def final_score(run: run_data.Run, num_iterations: int) -> Optional[float]:
  """Return the evaluation return of iteration `num_iterations`; None if absent."""
  at = np.flatnonzero(run.iteration == num_iterations)
  if not at.size or not np.isfinite(run.eval_return[at[0]]):
    return None
  return float(run.eval_return[at[0]])


def our_scores(runs: Sequence[run_data.Run], log=None) -> Scores:
  """Return {agent: {game: [final scores]}} of our Atari 100k runs.

  An agent's name is its package, prefixed with the --runs LABEL if one was
  given. Runs of another protocol, and unfinished runs, are left out (said on
  `log`, stderr by default).
  """
  log = log or sys.stderr
  grouped = collections.defaultdict(lambda: collections.defaultdict(list))
  others = unfinished = 0
  for run in runs:
    settings = atari100k_settings(run)
    if settings is None:
      others += 1
      continue
    # The final iteration is the protocol's last: run.json's num_iterations.
    score = final_score(run, int(settings['num_iterations']))
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


def normalised_matrix(agent: str, per_game: Mapping[str, np.ndarray],
                      human_random) -> np.ndarray:
  """Return the human-normalised [runs, 26 games] matrix of one agent.

  Every game must have runs; each game gives its first n runs, n the fewest
  any game has, so that the stratified bootstrap sees a full matrix.
  """
  missing = [g for g in GAMES if not len(per_game.get(g, ()))]
  if missing:
    raise ValueError(
        f'{agent} has no score for {len(missing)} of the 26 Atari 100k games: '
        f'{", ".join(missing)}. Run those games (or leave the agent out) '
        'before aggregating.')
  runs = min(len(per_game[g]) for g in GAMES)
  return np.stack([run_data.human_normalized(g, per_game[g][:runs],
                                             human_random) for g in GAMES], -1)


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


def aggregate_markdown(summaries: Sequence[Summary],
                       confidence: float = 0.95) -> str:
  """Return the markdown table of the aggregates."""
  pct = int(round(100 * confidence))
  lines = [f'Human-normalised score over the 26 games, point '
           f'[{pct}% stratified-bootstrap CI]; optimality gap: lower is '
           'better.', '']
  lines += tables.markdown(
      ['agent', 'runs/game'] + list(METRICS),
      [[s.agent, s.runs_per_game] +
       [f'{i.point:.3f} [{i.lower:.3f}, {i.upper:.3f}]'
        for i in (s.intervals[m] for m in METRICS)] for s in summaries], 'lr')
  return '\n'.join(lines) + '\n'


def per_game_markdown(scores: Scores) -> str:
  """Return the markdown table of each agent's mean raw score per game."""
  agents = list(scores)
  lines = ['Mean final evaluation return per game (all runs of each agent).',
           ''] + tables.markdown(
               ['game'] + agents,
               [[game] + [f'{np.mean(scores[a][game]):.1f}'
                          if len(scores[a].get(game, ())) else '–'
                          for a in agents] for game in GAMES],
               'l' + 'r' * len(agents))
  return '\n'.join(lines) + '\n'


def plot_profiles(path: str, matrices: Mapping[str, np.ndarray],
                  reps: int = 2_000, confidence: float = 0.95,
                  seed: int = 0) -> str:
  """Draw each agent's performance profile with its bootstrap band; return path."""
  # pylint: disable=g-import-not-at-top
  import matplotlib
  matplotlib.use('Agg')  # Files only; never needs a display.
  import matplotlib.pyplot as plt
  fig, ax = plt.subplots(figsize=(7, 4.5))
  for agent, matrix in matrices.items():
    point, lower, upper = bootstrap.profile_band(
        matrix, PROFILE_TAUS, reps=reps, confidence=confidence, seed=seed)
    line, = ax.plot(PROFILE_TAUS, point, label=agent)
    ax.fill_between(PROFILE_TAUS, lower, upper, color=line.get_color(),
                    alpha=0.2, linewidth=0)
  ax.set_xlabel(r'Human-normalised score ($\tau$)')
  ax.set_ylabel(r'Fraction of runs with score > $\tau$')
  ax.set_title('Atari 100k: score distributions '
               f'({int(round(100 * confidence))}% bands)')
  ax.grid(alpha=0.3)
  ax.legend()
  fig.tight_layout()
  fig.savefig(path, dpi=120)
  plt.close(fig)
  return path


def gather(runs_args: Sequence[str], agents: Sequence[str]) -> Scores:
  """Return the published `agents`' scores, then ours from --runs."""
  scores = load_published(agents=agents) if agents else {}
  runs = run_data.load_runs_args(runs_args)
  if runs:
    ours = our_scores(run_data.check_unique(runs))
    clash = sorted(set(ours) & set(scores))
    if clash:
      raise ValueError(f'Our agent(s) {clash} have a published agent\'s name; '
                       'pass --runs=LABEL=DIR to tell them apart.')
    scores.update(ours)
  if not scores:
    raise ValueError('Nothing to aggregate: pass --runs=DIR or keep some '
                     '--agents.')
  return scores


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  # Check every input before the slow bootstrap.
  try:
    scores = gather(FLAGS.runs, [a for a in FLAGS.agents if a])
    human_random = run_data.load_human_random()
    matrices = {agent: normalised_matrix(agent, per_game, human_random)
                for agent, per_game in scores.items()}
  except ValueError as e:
    sys.exit(f'Error: {e}')
  summaries = [summarise(agent, matrix, FLAGS.bootstrap_reps,
                         FLAGS.confidence, FLAGS.seed)
               for agent, matrix in matrices.items()]
  print(aggregate_markdown(summaries, FLAGS.confidence))
  print(per_game_markdown(scores))
  if FLAGS.profile_png:
    path = plot_profiles(FLAGS.profile_png, matrices, FLAGS.profile_reps,
                         FLAGS.confidence, FLAGS.seed)
    print(f'wrote {path}', file=sys.stderr)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
