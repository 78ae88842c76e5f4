r"""Measure a uniformly random policy's return on MinAtar games.

  python -m scripts.experiments.minatar_random [--games=asterix,breakout,seaquest]
      [--seeds=1,2,3] [--num_steps=25000] [--output_csv=PATH]
      [--loop=python|jitted]

The random policy picks each stream's action uniformly from the game's
minimal action set, in the environment the agents are evaluated in (sticky
actions, difficulty ramping). Its return is the statistic of the CSV's
`eval_episode_return`: one evaluation phase of --num_steps steps
(zoo.loops.python_loop.run_phase's budget rule: the mean over the episodes completed
within the budget). Each seed seeds the environment and the action draws; the
table gives the mean over seeds and the episodes behind it. --loop=jitted
plays the same phases in MinAtar in JAX (zoo.environments.minatar_jax_env), the
environment of the jitted loop, with JAX's random numbers.
"""

import os
import sys
import time
from typing import Sequence

from absl import app
from absl import flags
import numpy as np

from scripts.analysis import minatar_report
from zoo.storage import files
from zoo.environments import minatar_env
from zoo.loops import phase_accounting
from zoo.loops import python_loop
from zoo.configuration import cli

FLAGS = flags.FLAGS
DEFAULT_NUM_STEPS = 25_000  # One MinAtar evaluation phase (zoo.suites.minatar_suite).


def random_policy_return(game: str, seed: int,
                         num_steps: int = DEFAULT_NUM_STEPS
                         ) -> phase_accounting.PhaseStats:
  """Return the phase statistics of a uniformly random policy on one seed."""
  env = minatar_env.MinAtarEnvironment(game, seed)
  rng = np.random.default_rng(seed)

  def act(unused_timestep):
    return rng.integers(0, env.num_actions, env.num_envs)

  try:
    return python_loop.run_phase(env, act, num_steps, num_action_repeats=1)
  finally:
    env.close()


def random_policy_phase(game: str, seed: int,
                        num_steps: int) -> phase_accounting.PhaseStats:
  """Return a random policy's evaluation phase of `num_steps` (pgx-minatar).

  The steps run in JAX on one stream (zoo.environments.minatar_jax_env), then are counted
  by the loops' accountant with K = 1 (the budget rule).
  """
  # pylint: disable=g-import-not-at-top
  import jax
  from zoo.environments import minatar_jax_env
  # pylint: enable=g-import-not-at-top
  if num_steps < 1:
    raise ValueError(f'A phase needs a positive budget, got {num_steps}.')
  env = minatar_jax_env.make(game)
  start = time.perf_counter()
  _, step_types, rewards = minatar_jax_env.random_policy_steps(
      env, jax.random.PRNGKey(seed), num_steps)
  step_types = np.asarray(step_types)[:, None]
  rewards = np.asarray(rewards, np.float64)[:, None]
  duration = time.perf_counter() - start
  tally = phase_accounting.start(np.zeros(1))
  for step_type, reward in zip(step_types, rewards):
    tally = phase_accounting.count(tally, step_type, reward, num_steps, 1)
  return phase_accounting.phase_stats(tally, duration)


def measure(game: str, seeds: Sequence[int],
            num_steps: int = DEFAULT_NUM_STEPS,
            loop: str = 'python') -> minatar_report.RandomReturn:
  """Return the random policy's return on `game` for every seed."""
  phase = random_policy_phase if loop == 'jitted' else random_policy_return
  stats = [phase(game, seed, num_steps) for seed in seeds]
  return minatar_report.RandomReturn(
      game, list(seeds), [s.episode_return for s in stats],
      [s.num_episodes for s in stats], num_steps)


def main(unused_argv):
  try:
    games = [minatar_env.check_game(g) for g in FLAGS.games]
    seeds = [int(s) for s in FLAGS.seeds]
  except ValueError as e:
    raise app.UsageError(str(e))
  try:
    minatar_env.check_installed()
  except minatar_env.NotInstalledError as e:
    sys.exit(f'Error: {e}')
  if FLAGS.num_steps < 1:
    raise app.UsageError(f'--num_steps must be >= 1, got {FLAGS.num_steps}.')
  if FLAGS.output_csv:
    try:
      files.make_writable_directory(
          os.path.dirname(os.path.abspath(FLAGS.output_csv)))
    except OSError as e:
      raise app.UsageError(f'--output_csv: cannot write there ({e}).')
  if FLAGS.loop == 'jitted':
    from zoo.environments import minatar_jax_env  # pylint: disable=g-import-not-at-top
    try:
      for game in games:
        minatar_jax_env.make(game)
    except (ImportError, ValueError) as e:  # No pgx, or a refused game.
      raise app.UsageError(str(e))
  results = [measure(game, seeds, FLAGS.num_steps, FLAGS.loop)
             for game in games]
  print(minatar_report.random_markdown(results))
  if FLAGS.output_csv:
    rows = [{'game': r.game, 'num_steps_per_seed': r.num_steps,
             'seeds': ' '.join(str(s) for s in r.seeds),
             'episodes': sum(r.episodes),
             'return_per_seed': ' '.join(f'{x:.4f}' for x in r.returns),
             'mean_return': f'{r.mean:.4f}'} for r in results]
    files.write_csv_atomically(FLAGS.output_csv, list(rows[0]), rows)
    print(f'wrote {FLAGS.output_csv}', file=sys.stderr)


if __name__ == '__main__':
  flags.DEFINE_list('games', list(minatar_env.GAMES),
                    f'MinAtar games, from {", ".join(minatar_env.GAMES)}.')
  flags.DEFINE_list('seeds', ['1', '2', '3'], 'Seeds (integers).')
  flags.DEFINE_integer('num_steps', DEFAULT_NUM_STEPS,
                       'Steps per seed (one evaluation phase).')
  flags.DEFINE_string('output_csv', None, 'Also write the table here.')
  flags.DEFINE_enum('loop', 'python', ['python', 'jitted'],
                    'python: zoo.environments.minatar_env (minatar); jitted: '
                    'zoo.environments.minatar_jax_env (pgx-minatar).')
  cli.run(main)
