r"""Test that MinAtar in JAX is `minatar`'s MinAtar: random-policy statistics.

  python -m scripts.experiments.minatar_jax_agreement [--games=breakout,...]
      [--episodes=asterix:2000,...] [--seed=1] [--alpha=0.005]

For every game, a uniformly random policy (over the minimal action set) plays
complete episodes in zoo.environments.minatar_env (the `minatar` package, one stream,
episodes one after another) and in zoo.environments.minatar_jax_env (pgx-minatar, episodes
vmapped), both with sticky actions and difficulty ramping. The table gives the
mean episode return and length with their standard errors on each side and
the z statistic of the difference, z = (mean_jax - mean_minatar) /
sqrt(se_jax^2 + se_minatar^2); a game agrees when |z| is below the two-sided
critical value at --alpha for both statistics. The default alpha, 0.005, is a
family-wise 5% over the ten comparisons of five games (Bonferroni).
"""

import math
import statistics
import sys
import time
from typing import Dict, List, NamedTuple, Sequence, Tuple

from absl import app
from absl import flags
import jax
import numpy as np

from scripts.analysis import evaluate
from scripts.analysis import tables
from zoo.environments import minatar_env
from zoo.configuration import cli

FLAGS = flags.FLAGS
DEFAULT_ALPHA = 0.005
# Episodes per side: about 1-2 minutes of `minatar` per game on one core.
DEFAULT_EPISODES: Dict[str, int] = {
    'asterix': 2000, 'breakout': 10000, 'freeway': 200, 'seaquest': 5000,
    'space_invaders': 1000}


class Sample(NamedTuple):
  returns: np.ndarray  # [n] episode returns.
  lengths: np.ndarray  # [n] episode lengths (frames).
  seconds: float


class Agreement(NamedTuple):
  game: str
  minatar: Sample
  jax: Sample
  return_z: float
  length_z: float
  critical_z: float

  @property
  def agrees(self) -> bool:
    return max(abs(self.return_z), abs(self.length_z)) < self.critical_z


def minatar_episodes(game: str, seed: int, num_episodes: int) -> Sample:
  """Play episodes one after another in zoo.environments.minatar_env, random actions."""
  start = time.perf_counter()
  env = minatar_env.MinAtarEnvironment(game, seed)
  rng = np.random.default_rng(seed)
  try:
    episodes, _ = evaluate.play(
        env, lambda _: rng.integers(0, env.num_actions, 1), num_episodes, 1,
        lambda _: math.nan)
  finally:
    env.close()
  # play counts an episode's first timestep, which no action made.
  return Sample(np.array([e.episode_return for e in episodes]),
                np.array([e.num_frames - 1 for e in episodes]),
                time.perf_counter() - start)


def jax_episodes(game: str, seed: int, num_episodes: int) -> Sample:
  """Play episodes vmapped in zoo.environments.minatar_jax_env, random actions."""
  from zoo.environments import minatar_jax_env  # pylint: disable=g-import-not-at-top
  start = time.perf_counter()
  env = minatar_jax_env.make(game)
  _, returns, lengths = minatar_jax_env.random_policy_episodes(
      env, jax.random.PRNGKey(seed), num_episodes)
  return Sample(np.asarray(returns, np.float64), np.asarray(lengths),
                time.perf_counter() - start)


def mean_se(x: np.ndarray) -> Tuple[float, float]:
  """Return the mean and its standard error."""
  x = np.asarray(x, np.float64)
  return float(x.mean()), float(x.std(ddof=1) / math.sqrt(len(x)))


def z_statistic(a: np.ndarray, b: np.ndarray) -> float:
  """Return (mean b - mean a) / SE of the difference (0 if both constant)."""
  mean_a, se_a = mean_se(a)
  mean_b, se_b = mean_se(b)
  se = math.hypot(se_a, se_b)
  if se == 0:
    return 0.0 if mean_a == mean_b else math.copysign(math.inf,
                                                      mean_b - mean_a)
  return (mean_b - mean_a) / se


def critical_z(alpha: float) -> float:
  """Return the two-sided critical value of a standard normal at `alpha`."""
  return statistics.NormalDist().inv_cdf(1 - alpha / 2)


def compare(game: str, num_episodes: int, seed: int = 1,
            alpha: float = DEFAULT_ALPHA) -> Agreement:
  """Return the random-policy agreement of the two environments on `game`."""
  reference = minatar_episodes(game, seed, num_episodes)
  candidate = jax_episodes(game, seed, num_episodes)
  return Agreement(game, reference, candidate,
                   z_statistic(reference.returns, candidate.returns),
                   z_statistic(reference.lengths, candidate.lengths),
                   critical_z(alpha))


def to_markdown(results: Sequence[Agreement]) -> str:
  """Return the agreement table."""
  def cell(x):
    return '{:.3f} ± {:.3f}'.format(*mean_se(x))
  return '\n'.join(tables.markdown(
      ['game', 'episodes per side', 'return, minatar', 'return, JAX', 'z',
       'length, minatar', 'length, JAX', 'z', 'agrees'],
      [[r.game, f'{len(r.minatar.returns):,}', cell(r.minatar.returns),
        cell(r.jax.returns), f'{r.return_z:+.2f}', cell(r.minatar.lengths),
        cell(r.jax.lengths), f'{r.length_z:+.2f}',
        'yes' if r.agrees else 'NO'] for r in results], 'l' + 'r' * 7))


def parse_episodes(items: Sequence[str], games: Sequence[str]
                   ) -> Dict[str, int]:
  """Return episodes per game from game:N items over the defaults."""
  episodes = {g: DEFAULT_EPISODES[g] for g in games}
  for item in items:
    game, sep, count = item.partition(':')
    if not sep or not count.strip().isdigit() or int(count) < 2:
      raise ValueError(f'--episodes takes game:N with N >= 2, got {item!r}.')
    episodes[minatar_env.check_game(game.strip())] = int(count)
  return episodes


def main(unused_argv):
  try:
    games = [minatar_env.check_game(g) for g in FLAGS.games]
    episodes = parse_episodes(FLAGS.episodes, games)
  except ValueError as e:
    raise app.UsageError(str(e))
  if not 0 < FLAGS.alpha < 1:
    raise app.UsageError(f'--alpha must lie in (0, 1), got {FLAGS.alpha}.')
  results: List[Agreement] = []
  for game in games:
    result = compare(game, episodes[game], FLAGS.seed, FLAGS.alpha)
    print(f'{game}: minatar {result.minatar.seconds:.1f} s, JAX '
          f'{result.jax.seconds:.1f} s (compilation included)',
          file=sys.stderr, flush=True)
    results.append(result)
  print(to_markdown(results))
  print(f'\nz: (JAX - minatar) / SE of the difference; agrees: |z| < '
        f'{critical_z(FLAGS.alpha):.3f} for both (two-sided, alpha = '
        f'{FLAGS.alpha:g} each); seed {FLAGS.seed}; jax on '
        f'{jax.devices()[0].platform}.')


if __name__ == '__main__':
  flags.DEFINE_list('games', list(minatar_env.GAMES),
                    f'MinAtar games, from {", ".join(minatar_env.GAMES)}.')
  flags.DEFINE_list('episodes', [],
                    'Episodes per side as game:N (default per game: '
                    + ', '.join(f'{g}:{n}' for g, n in DEFAULT_EPISODES.items())
                    + ').')
  flags.DEFINE_integer('seed', 1, 'Seed of both sides.')
  flags.DEFINE_float('alpha', DEFAULT_ALPHA,
                     'Two-sided level of each z-test.')
  cli.run(main)
