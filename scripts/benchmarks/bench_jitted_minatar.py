r"""Benchmark the jitted MinAtar loop against the Python loop, side by side.

  python -m scripts.benchmarks.bench_jitted_minatar [--environment_name=breakout]
      [--configs=CR-DQN,QR-DQN-1] [--num_seeds=1,4,16] [--num_steps=4000]
      [--repeats=3] [any run flag, e.g. --num_quantiles=51]

For each configuration of scripts.benchmarks.bench_minatar, with MinAtar's
defaults (N = 201, replay 100k, learning from 5k steps, one update per 4 steps), in one
process: the Python loop (scripts.benchmarks.bench_minatar's training phase: env, act,
replay, updates) and the jitted loop (zoo.loops.jitted_loop's training phases) with 1, 4 and 16 seeds
vmapped, each warmed up past the learning start (the jitted chunk compiled),
then measured in turns (--repeats rounds, a training phase of --num_steps
steps per seed each) so that load from other processes hits them alike.
Prints medians of the rounds: training steps/s per seed and in total, and the
memory per seed of the jitted loop (replay with bit-packed frames, online and
target parameters, Adam's state). XLA runs single-threaded by default
(--single_threaded), as each run of a study does. The last line, `figures:`,
holds the figures as JSON.
"""

import dataclasses
import os
import statistics
import time
from typing import Any, Dict, List

from absl import app
from absl import flags
import jax
import numpy as np

from scripts.analysis import tables
from scripts.benchmarks import bench_minatar
from scripts.benchmarks import timing
from zoo.configuration import agent_registry
from zoo.loops import jitted_loop
from zoo.suites import minatar_suite
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags
from zoo.configuration import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
  """Define the flags of this entry point (only when run)."""
  flags.DEFINE_list('configs', ['CR-DQN', 'QR-DQN-1'],
                    'Configurations of bench_minatar to measure.')
  flags.DEFINE_list('num_seeds', ['1', '4', '16'], 'Vmapped seeds to measure.')
  flags.DEFINE_integer('num_steps', 4000, 'Training steps per seed per '
                       'measurement (a multiple of the block, 4 steps).')
  flags.DEFINE_integer('repeats', 3, 'Rounds over the loops.')
  flags.DEFINE_bool('single_threaded', True,
                    'Run XLA on one thread, as a study run does.')


def tree_bytes(tree) -> int:
  return sum(np.asarray(x).nbytes for x in jax.tree.leaves(tree))


class JittedBench:
  """One configuration's jitted loop with S vmapped seeds, warmed up."""

  def __init__(self, label: str, preset, s: settings_lib.Settings,
               num_seeds: int, num_steps: int):
    self.name = f'{label} jitted x{num_seeds}'
    self.num_seeds = num_seeds
    self.num_steps = num_steps
    runs = [dataclasses.replace(s, seed=x, num_train_frames=num_steps *
                                s.num_envs * s.num_action_repeats)
            for x in range(1, num_seeds + 1)]
    # The loop a run uses: zoo.loops.jitted_loop, one training phase a round.
    self.loop = jitted_loop.make(minatar_suite.MINATAR, preset, runs)
    one = jax.tree.map(lambda x: x[0], self.loop.states)
    self.replay_bytes = tree_bytes(one.replay)
    self.learner_bytes = tree_bytes((one.params, one.target_params,
                                     one.opt_state))
    self.iteration = 0
    # Fill past the learning start (and compile): learning from then on.
    cfg = self.loop.cfg
    while self.loop.frame_t < cfg.min_replay_size + cfg.block_frames:
      self._run()
    self.rates: List[float] = []

  def _run(self) -> float:
    self.iteration += 1
    result = self.loop.train(self.iteration, lambda frames: None)[0]
    return result.stats.duration

  def measure_round(self) -> None:
    self.rates.append(self.num_steps / self._run())

  def close(self) -> None:
    self.loop.close()


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  configs = bench_minatar._configs(FLAGS.configs)  # pylint: disable=protected-access
  try:
    num_seeds = [int(x) for x in FLAGS.num_seeds]
  except ValueError:
    raise app.UsageError(f'--num_seeds: integers, got {FLAGS.num_seeds}.')
  if FLAGS.repeats < 1 or FLAGS.num_steps < 4 or FLAGS.num_steps % 4:
    raise app.UsageError('--repeats >= 1 and --num_steps a positive multiple '
                         'of 4, please.')
  base = settings_flags.values_from_flags()
  resolved = {}
  for config in configs:
    settings = dict(base, results_csv_path='', checkpoint_dir='',
                    tensorboard_dir='', loop='jitted',
                    **bench_minatar.config_settings(config))
    try:
      s = settings_lib.resolve_settings(minatar_suite.MINATAR,
                                        agent_registry.presets()[config.preset],
                                        settings)
      settings_lib.validate_settings(minatar_suite.MINATAR, s)
      jitted_loop.check(minatar_suite.MINATAR, s)
    except settings_lib.ConfigError as e:
      raise app.UsageError(f'{config.label}: {e}')
    resolved[config.label] = s
  if FLAGS.single_threaded:
    os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') + ' ' +
                               bench_minatar.SINGLE_THREADED_XLA).strip()
  print(f'machine: {bench_minatar.machine()}', flush=True)
  print(f'JAX device: {jax.devices()[0]}; XLA '
        f'{"single-threaded" if FLAGS.single_threaded else "multi-threaded"}'
        f'; game {FLAGS.environment_name}; {FLAGS.num_steps} training steps '
        f'per seed per round, {FLAGS.repeats} rounds.', flush=True)
  benches = []
  for config in configs:
    start = time.perf_counter()
    reference = bench_minatar.ConfigBench(config, base)
    reference.name = f'{config.label} python'
    benches.append(reference)
    print(f'{reference.name}: warmed up in {time.perf_counter() - start:.0f} '
          's', flush=True)
    for count in num_seeds:
      start = time.perf_counter()
      benches.append(JittedBench(
          config.label, agent_registry.presets()[config.preset],
          resolved[config.label], count, FLAGS.num_steps))
      print(f'{benches[-1].name}: warmed up (compiled, replay past its '
            f'minimum) in {time.perf_counter() - start:.0f} s', flush=True)
  for round_index in range(FLAGS.repeats):
    for bench in benches:
      if isinstance(bench, JittedBench):
        bench.measure_round()
      else:
        bench.measure_round(FLAGS.num_steps, 3)
    print(f'round {round_index + 1}/{FLAGS.repeats} done', flush=True)
  print()
  rows = table_rows({
      config.label: [b for b in benches
                     if b.name.startswith(config.label + ' ')]
      for config in configs})
  print('\n'.join(tables.markdown(
      ['configuration', 'loop', 'seeds', 'train steps/s per seed',
       'train steps/s total', 'vs python', 'memory per seed'], rows,
      'llrrrrl')))
  print('\n(steps/s: training with learning active, one update per 4 steps; '
        'total: all seeds of the process; medians of the rounds.)')
  print(f'machine at the end: {bench_minatar.machine()}')
  for bench in benches:
    bench.close()
  timing.print_figures(figures(rows, FLAGS.environment_name))


def table_rows(groups: Dict[str, list]) -> List[List[Any]]:
  """Return the table's rows: per configuration label, its Python loop's
  bench (train_rates, replay), then its jitted benches (rates, num_seeds,
  replay_bytes, learner_bytes)."""
  rows = []
  for label, group in groups.items():
    python_rate = statistics.median(group[0].train_rates)
    rows.append([label, 'python', 1, f'{python_rate:.0f}',
                 f'{python_rate:.0f}', '1.00x', 'replay '
                 f'{group[0].replay.nbytes / 1e6:.1f} MB (host, uint8)'])
    for bench in group[1:]:
      rate = statistics.median(bench.rates)
      total = rate * bench.num_seeds
      rows.append([label, 'jitted', bench.num_seeds, f'{rate:.0f}',
                   f'{total:.0f}', f'{total / python_rate:.2f}x',
                   f'replay {bench.replay_bytes / 1e6:.1f} MB + learner '
                   f'{bench.learner_bytes / 1e6:.1f} MB'])
  return rows


def figures(rows: List[List[Any]], game: str) -> List[Dict[str, str]]:
  """Return the figures of table_rows(): steps/s per seed and in total, and
  the total over the Python loop's."""
  out = []
  for label, loop, seeds, per_seed, total, ratio, _ in rows:
    key = f'minatar.bench_jitted_minatar.{{}}:{label}:{loop}:{seeds}'
    what = (f'MinAtar {game}, {label}, the {loop} loop, {seeds} seed(s): '
            '{} (median of the rounds)')
    out += [timing.figure(key.format('train_steps_per_s_per_seed'),
                          what.format('training steps/s per seed'), per_seed,
                          'steps/s'),
            timing.figure(key.format('train_steps_per_s_total'),
                          what.format('training steps/s, all seeds'), total,
                          'steps/s'),
            timing.figure(key.format('vs_python'),
                          what.format('total steps/s over the Python '
                                      'loop\'s'), ratio.rstrip('x'), 'x')]
  return out


if __name__ == '__main__':
  settings_flags.set_flag_defaults(minatar_suite.MINATAR)
  define_flags()
  cli.run(main)
