r"""Benchmark the jitted MinAtar loop against the Python loop, side by side.

  python -m scripts.benchmarks.bench_jitted_minatar [--environment_name=breakout]
      [--configs=CR-DQN,QR-DQN-1] [--num_seeds=1,4,16] [--num_steps=4000]
      [--repeats=3] [any run flag, e.g. --num_quantiles=51]

For each configuration of bench_minatar (MinAtar's defaults), the Python loop
and the jitted loop (zoo.loops.jitted_loop) with each count of vmapped seeds,
warmed up past the learning start; each round, a training phase of
--num_steps steps per seed. Prints training steps/s per seed and in total
(medians of the rounds) and the jitted loop's memory per seed. XLA runs
single-threaded (--single_threaded). The last line, `figures:`, holds the
figures as JSON.
"""

import dataclasses

from absl import app
from absl import flags
import jax
import numpy as np

from scripts.benchmarks import bench_minatar
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags
from zoo.loops import jitted_loop
from zoo.suites import minatar_suite

FLAGS = flags.FLAGS


def define_flags() -> None:
  """Define the flags of this entry point (only when run)."""
  flags.DEFINE_list('configs', ['CR-DQN', 'QR-DQN-1'],
                    'Configurations of bench_minatar to measure.')
  flags.DEFINE_list('num_seeds', ['1', '4', '16'], 'Vmapped seeds to measure.')
  flags.DEFINE_integer('num_steps', 4000, 'Training steps per seed per '
                       'measurement (a multiple of the block, 4 steps).')
  harness.define_flags(repeats=3)
  flags.DEFINE_bool('single_threaded', True,
                    'Run XLA on one thread, as a study run does.')


def tree_bytes(tree) -> int:
  return sum(np.asarray(x).nbytes for x in jax.tree.leaves(tree))


class JittedPhases:
  """A jitted loop (zoo.loops.jitted_loop) of the runs `runs` (vmapped
  seeds), compiled and past its learning start: every later block runs its
  updates. Bytes per seed: replay_bytes, learner_bytes."""

  def __init__(self, suite, preset, runs):
    self.loop = jitted_loop.make(suite, preset, runs)
    states = self.loop.states
    self.replay_bytes = tree_bytes(states.replay) // len(runs)
    self.learner_bytes = tree_bytes(
        (states.params, states.target_params, states.opt_state)) // len(runs)
    self.iteration = 0
    self.phase_s()  # Compiles the phase's one chunk.
    while self.num_updates == 0:
      self.phase_s()

  def phase_s(self) -> float:
    """Run one training phase; return its seconds (synchronised)."""
    self.iteration += 1
    result = self.loop.train(self.iteration, lambda frames: None)[0]
    return result.stats.duration

  @property
  def num_updates(self) -> int:
    return self.loop.cfg.updates_done(self.loop.frame_t)

  def close(self) -> None:
    self.loop.close()


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  configs = bench_minatar.configs_named(FLAGS.configs)
  try:
    num_seeds = [int(x) for x in FLAGS.num_seeds]
  except ValueError:
    raise app.UsageError(f'--num_seeds: integers, got {FLAGS.num_seeds}.')
  if FLAGS.num_steps < 4 or FLAGS.num_steps % 4:
    raise app.UsageError('--num_steps: a positive multiple of 4, please.')
  base = settings_flags.values_from_flags()
  resolved = {}
  for config in configs:  # Up front.
    s = resolved[config.label] = bench_minatar.settings_of(
        config, base, tensorboard_dir='', loop='jitted')
    try:
      jitted_loop.check(minatar_suite.MINATAR, s)
    except settings_lib.ConfigError as e:
      raise app.UsageError(f'{config.label}: {e}')
  print(bench_minatar.start_xla(FLAGS.single_threaded), flush=True)
  print(f'game {FLAGS.environment_name}; {FLAGS.num_steps} training steps '
        f'per seed per round, {FLAGS.repeats} rounds.', flush=True)
  variants, rows = {}, {}
  for config in configs:
    python = harness.ready(f'{config.label} python', lambda c=config: (
        bench_minatar.ConfigBench(c, bench_minatar.settings_of(c, base))))
    variants[config.label, 'python', 1] = lambda b=python: b.measure_round(
        FLAGS.num_steps, 3)['frames/s']
    rows[config.label, 'python', 1] = (
        python, f'replay {python.replay.nbytes / 1e6:.1f} MB (host, uint8)')
    s = resolved[config.label]
    for count in num_seeds:
      bench = harness.ready(
          f'{config.label} jitted x{count}', lambda c=config, n=count: (
              JittedPhases(minatar_suite.MINATAR,
                           agent_registry.presets()[c.preset],
                           [dataclasses.replace(
                               s, seed=x, num_train_frames=FLAGS.num_steps *
                               s.num_envs * s.num_action_repeats)
                            for x in range(1, n + 1)])))
      variants[config.label, 'jitted', count] = (
          lambda b=bench: FLAGS.num_steps / b.phase_s())
      rows[config.label, 'jitted', count] = (
          bench, f'replay {bench.replay_bytes / 1e6:.1f} MB + learner '
          f'{bench.learner_bytes / 1e6:.1f} MB')
  rates = harness.medians(harness.measure(
      {':'.join(map(str, key)): fn for key, fn in variants.items()},
      FLAGS.repeats))
  for bench, _ in rows.values():
    bench.close()
  columns = {'train steps/s per seed': ('train_steps_per_s_per_seed',
                                        'steps/s'),
             'train steps/s total': ('train_steps_per_s_total', 'steps/s'),
             'vs python': ('vs_python', 'x'), 'memory per seed': ('', '')}
  cells = {}
  for (label, loop, seeds), (_, memory) in rows.items():
    rate = rates[f'{label}:{loop}:{seeds}'][harness.VALUE]
    python = rates[f'{label}:python:1'][harness.VALUE]
    cells[label, loop, seeds] = dict(zip(columns, (
        f'{rate:.0f}', f'{rate * seeds:.0f}',
        f'{rate * seeds / python:.2f}x', memory)))
  figures = harness.report(
      'minatar.bench_jitted_minatar', f'MinAtar {FLAGS.environment_name}',
      ['configuration', 'loop', 'seeds'], columns, cells, 'llrrrrl')
  print('\n(steps/s: training with learning active, one update per 4 steps; '
        'total: all seeds of the process; medians of the rounds.)')
  print(f'machine at the end: {harness.machine()}')
  harness.print_figures(figures)


if __name__ == '__main__':
  settings_flags.set_flag_defaults(minatar_suite.MINATAR)
  define_flags()
  cli.run(main)
