r"""Benchmark the MinAtar loops: training and evaluation steps/s, and the parts.

  python -m scripts.benchmarks.bench_minatar [--environment_name=breakout]
      [--num_steps=3000] [--repeats=3]
      [--configs=QR-DQN-1,QR-DQN-0,CR-DQN,NC-CR-DQN,NC-QR-DQN-0,CR-DQN-K8]
      [--loops=python,jitted] [--num_seeds=1,4,16]
      [any run flag, e.g. --num_quantiles=51]

For every configuration of the MinAtar study (MinAtar's defaults: N = 201,
one update per 4 steps, replay 100k, learning from 5k steps; the run flags
change them), warmed up past the learning start, each round measures the
loops of --loops. The Python loop: a training phase of --num_steps steps, an
evaluation phase, then each part on its own (env step, action selection for K
streams, replay add and sample(32), update; medians of --timing_repeats
calls); then the study estimate (mean ms per training and evaluation step
over the K = 1 configurations). The jitted loop (zoo.loops.jitted_loop) at
each count of --num_seeds vmapped seeds: a training phase of --num_steps
steps per seed (whole blocks: K = 1 learns every 4 steps), in a table of the
loops side by side (steps/s per seed and in total, memory per seed); steps
count every stream. XLA runs
single-threaded (--single_threaded), as each run of a study does. The last
line, `figures:`, holds the figures as JSON.
"""
import dataclasses
import os
import statistics
import sys
from typing import Any, Dict, List, NamedTuple, Tuple

from absl import app
from absl import flags
import numpy as np

from scripts.benchmarks import bench_agent
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags
from zoo.environments import environment
from zoo.environments import minatar_env
from zoo.loops import build
from zoo.loops import jitted_loop
from zoo.loops import python_loop
from zoo.replay import frame_replay as replay_lib
from zoo.suites import minatar_suite

FLAGS = flags.FLAGS
SINGLE_THREADED_XLA = ('--xla_cpu_multi_thread_eigen=false '
                       'intra_op_parallelism_threads=1')
# The table's columns: each one's quantity in the figure keys, and its unit.
COLUMNS = {'train steps/s': ('train_steps_per_s', 'steps/s'),
           'train ms/step': ('train_ms_per_step', 'ms'),
           'eval ms/step': ('eval_ms_per_step', 'ms'),
           'update ms': ('update_ms', 'ms'),
           'updates share': ('updates_share', '%'),
           'act ms': ('act_ms', 'ms'), 'env ms': ('env_ms', 'ms'),
           'replay add ms': ('replay_add_ms', 'ms'),
           'sample ms': ('sample_ms', 'ms')}
# The loops side by side (with --loops=...,jitted).
LOOP_COLUMNS = {'train steps/s per seed': ('train_steps_per_s_per_seed',
                                           'steps/s'),
                'train steps/s total': ('train_steps_per_s_total', 'steps/s'),
                'vs python': ('vs_python', 'x'), 'memory per seed': ('', '')}


class Config(NamedTuple):
  """A configuration of the MinAtar study: a preset and run settings."""
  label: str
  preset: str  # A preset of zoo.configuration.agent_registry.
  settings: Tuple[Tuple[str, Any], ...] = ()  # Beyond the preset's.


STUDY_PRESETS = ('QR-DQN-1', 'QR-DQN-0', 'CR-DQN', 'NC-CR-DQN', 'NC-QR-DQN-0')
CONFIGS = tuple(Config(name, name) for name in STUDY_PRESETS)
K_STREAM_CONFIG = Config('CR-DQN-K8', 'CR-DQN', (('num_envs', 8),))
# Measured when named in --configs: the smoothed Cramér loss and the
# sampled-level agents.
OPTIONAL_CONFIGS = (Config('CR-DQN-MQ', 'CR-DQN-MQ'), Config('IQN', 'IQN'),
                    Config('CR-IQN', 'CR-IQN'))
KNOWN_CONFIGS = {c.label: c for c in
                 CONFIGS + (K_STREAM_CONFIG,) + OPTIONAL_CONFIGS}


def settings_of(config: Config, base, **changes) -> settings_lib.Settings:
  """Return a configuration's settings over the run flags' `base`; a
  UsageError naming the configuration and the bad setting."""
  try:
    s = settings_lib.resolve_settings(
        minatar_suite.MINATAR, agent_registry.presets()[config.preset],
        dict(base, results_csv_path='', checkpoint_dir='',
             **dict(config.settings, **changes)))
    settings_lib.validate_settings(minatar_suite.MINATAR, s)
  except settings_lib.ConfigError as e:
    raise app.UsageError(f'{config.label}: {e}')
  return s


class ConfigBench(bench_agent.AgentBench):
  """One configuration's agent, replay and environments, warmed up."""

  def __init__(self, config: Config, s: settings_lib.Settings):
    super().__init__(config.label, minatar_suite.MINATAR, s,
                     s.min_replay_size() + 64 * s.num_envs)
    self.eval_env = build.make_environment_factory(
        minatar_suite.MINATAR, s)(1, 'eval')
    python_loop.run_phase(self.eval_env, self.agent.eval_step, 64, 1)

  def measure_round(self, num_steps: int, repeats: int) -> Dict[str, float]:
    """Measure a training and an evaluation phase, then each part."""
    out = self.train(num_steps)
    stats = python_loop.run_phase(self.eval_env, self.agent.eval_step,
                                  num_steps, 1)
    out['eval ms'] = 1e3 / stats.frame_rate
    return dict(out, **self._part_times(repeats))

  def _part_times(self, repeats: int) -> Dict[str, float]:
    agent, k = self.agent, self.num_envs
    batch = self.replay.sample(32, stacks_last=False)
    times = {'update': harness.median_ms(lambda: agent.learn_from(batch),
                                         repeats)}
    observation = self.replay.sample(k).s_t
    times.update(bench_agent.part_ms(agent, self.env, observation, 0.01,
                                     repeats))
    times['sample'] = harness.median_ms(
        lambda: self.replay.sample(32, stacks_last=False), repeats)
    # A scratch replay of the same shape, so that the agent's stays intact.
    scratch = replay_lib.FrameReplay(
        1000 * k, k, observation.shape[1:-1], observation.shape[-1])
    step_type = np.full(k, environment.MID)
    actions = np.zeros(k, np.int32)
    rewards, discounts = np.zeros(k, np.float32), np.ones(k, np.float32)
    times['add'] = harness.median_ms(
        lambda: scratch.add(step_type, observation, actions, rewards,
                            discounts), repeats)
    return times

  @staticmethod
  def row(m: Dict[str, float]) -> Dict[str, str]:
    """Return the table's cells of a configuration's medians `m`."""
    return dict(zip(COLUMNS, (
        f'{m["frames/s"]:.0f}', f'{1e3 / m["frames/s"]:.3f}',
        f'{m["eval ms"]:.3f}',
        f'{m["update"]:.2f}', f'{m["updates/s"] * m["update"] / 1e3:.0%}',
        f'{m["act"]:.3f}', f'{m["env"]:.3f}', f'{m["add"]:.3f}',
        f'{m["sample"]:.3f}')))

  def close(self) -> None:
    super().close()
    self.eval_env.close()


def jitted_settings(config: Config, base, num_steps: int
                    ) -> settings_lib.Settings:
  """Return a configuration's settings in the jitted loop, a training phase
  of `num_steps` steps; a UsageError if that loop cannot run them."""
  s = settings_of(config, base, tensorboard_dir='', loop='jitted',
                  num_train_frames=num_steps)  # MinAtar: a frame a step.
  try:
    jitted_loop.check(minatar_suite.MINATAR, s)
  except settings_lib.ConfigError as e:
    raise app.UsageError(f'{config.label}, --num_steps={num_steps}: {e}')
  return s


def jitted_bench(config: Config, s: settings_lib.Settings,
                 num_seeds: int) -> bench_agent.JittedPhases:
  """Return the jitted loop of `num_seeds` vmapped seeds of `s`."""
  return bench_agent.JittedPhases(
      minatar_suite.MINATAR, agent_registry.presets()[config.preset],
      [dataclasses.replace(s, seed=seed) for seed in range(1, num_seeds + 1)])


def loop_cells(rates: Dict[str, float], memory: Dict[str, str]
               ) -> Dict[Tuple[str, str, int], Dict[str, str]]:
  """Return the cells of the loops side by side.

  rates, memory: by 'configuration:loop:seeds', the training steps/s per
  seed and the memory per seed; 'vs python' is '-' without the Python
  loop's rate.
  """
  cells = {}
  for name, rate in rates.items():
    label, loop, seeds = name.split(':')
    seeds = int(seeds)
    python = rates.get(f'{label}:python:1')
    cells[label, loop, seeds] = dict(zip(LOOP_COLUMNS, (
        f'{rate:.0f}', f'{rate * seeds:.0f}',
        f'{rate * seeds / python:.2f}x' if python else '-', memory[name])))
  return cells


def main(argv):
  del argv
  configs = [KNOWN_CONFIGS[label] for label in FLAGS.configs]
  python, jitted = 'python' in FLAGS.loops, 'jitted' in FLAGS.loops
  try:
    num_seeds = [int(x) for x in FLAGS.num_seeds] if jitted else []
  except ValueError:
    raise app.UsageError(f'--num_seeds: integers, got {FLAGS.num_seeds}.')
  try:
    minatar_env.check_installed()
  except minatar_env.NotInstalledError as e:
    sys.exit(f'Error: {e}')
  if FLAGS.num_steps < 1:
    raise app.UsageError(f'--num_steps must be >= 1, got {FLAGS.num_steps}.')
  base = settings_flags.values_from_flags()
  resolved = [settings_of(config, base) for config in configs]  # Up front.
  jitted_resolved = [jitted_settings(c, base, FLAGS.num_steps)
                     for c in configs if jitted]
  if FLAGS.single_threaded:  # Read when the XLA backend starts, just below.
    os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') + ' ' +
                               SINGLE_THREADED_XLA).strip()
  print(f'machine: {harness.machine()}; XLA '
        f'{"single" if FLAGS.single_threaded else "multi"}-threaded',
        flush=True)
  print(f'game {FLAGS.environment_name}; loops {", ".join(FLAGS.loops)}; '
        f'{FLAGS.num_steps} training and evaluation steps per configuration '
        f'(and seed) per round, {FLAGS.repeats} rounds.', flush=True)
  python_benches = [harness.ready(
      f'{c.label} (N={s.num_quantiles}, K={s.num_envs}, one update per '
      f'{s.learn_period} steps)', lambda c=c, s=s: ConfigBench(c, s))
                    for c, s in zip(configs, resolved) if python]
  jitted_benches = {f'{c.label}:jitted:{n}': harness.ready(
      f'{c.label} jitted x{n}', lambda c=c, s=s, n=n: jitted_bench(c, s, n))
                    for c, s in zip(configs, jitted_resolved)
                    for n in num_seeds}
  variants = {b.name: lambda b=b: b.measure_round(FLAGS.num_steps,
                                                  FLAGS.timing_repeats)
              for b in python_benches}
  variants.update({name: lambda b=b: b.phase().frame_rate
                   for name, b in jitted_benches.items()})
  medians = harness.medians(harness.measure(variants, FLAGS.repeats))
  for bench in python_benches + list(jitted_benches.values()):
    bench.close()
  game = FLAGS.environment_name
  figures = []
  if python:
    figures = harness.report(
        'minatar.bench_minatar', f'MinAtar {game}', ['configuration'],
        COLUMNS, {b.name: ConfigBench.row(medians[b.name])
                  for b in python_benches}, 'l' + 'r' * len(COLUMNS))
    print('\n(act: one call for the K streams; env: one step of the K '
          'streams; steps count every stream.)')
  if jitted:
    rates = {f'{b.name}:python:1': medians[b.name]['frames/s']
             for b in python_benches}
    rates.update({name: medians[name][harness.VALUE]
                  for name in jitted_benches})
    memory = {f'{b.name}:python:1': f'replay {b.replay.nbytes / 1e6:.1f} MB '
              '(host, uint8)' for b in python_benches}
    memory.update({name: f'replay {b.replay_bytes / 1e6:.1f} MB + learner '
                   f'{b.learner_bytes / 1e6:.1f} MB'
                   for name, b in jitted_benches.items()})
    figures += harness.report(
        'minatar.bench_minatar.loops', f'MinAtar {game}',
        ['configuration', 'loop', 'seeds'], LOOP_COLUMNS,
        loop_cells(rates, memory), 'llrrrrl')
    print('\n(steps/s: training with learning active, one update per 4 '
          'steps; total: all seeds of the process; medians of the rounds.)')
  print(f'machine at the end: {harness.machine()}')
  if python:
    figures += study_estimate(python_benches, medians, game)
  harness.print_figures(figures)


def study_estimate(benches: List[ConfigBench], medians, game: str
                   ) -> List[Dict[str, str]]:
  """Print the study estimate of the Python loop's medians; return its
  figures."""
  chosen = [b for b in benches if b.num_envs == 1] or benches
  estimate = f'mean over {len(chosen)} ' + (
      'K=1 configurations' if chosen[0].num_envs == 1 else
      'configurations, none K=1')
  steps_ms = {
      'train_step_ms': statistics.mean(1e3 / medians[b.name]['frames/s']
                                       for b in chosen),
      'eval_step_ms': statistics.mean(medians[b.name]['eval ms']
                                      for b in chosen)}
  print('study estimate: ' + ' '.join(
      f'--{q}={ms:.2f}' for q, ms in steps_ms.items()) + f' ({estimate})')
  return [harness.figure(
      f'minatar.bench_minatar.study_{q}',
      f'MinAtar {game}: the study estimate\'s --{q} ({estimate})',
      f'{ms:.2f}', 'ms') for q, ms in steps_ms.items()]


if __name__ == '__main__':
  settings_flags.set_flag_defaults(minatar_suite.MINATAR)
  # The run settings are the run flags, with MinAtar's defaults.
  harness.define_choices(
      'configs', [c.label for c in CONFIGS + (K_STREAM_CONFIG,)],
      list(KNOWN_CONFIGS), 'Configurations to measure')
  flags.DEFINE_integer('num_steps', 3000,
                       'Training steps per configuration per round (eval: '
                       'the same number; the jitted loop: training, per '
                       'seed, whole blocks).')
  harness.define_choices('loops', ['python'], ('python', 'jitted'),
                         'Loops to measure')
  flags.DEFINE_list('num_seeds', ['1', '4', '16'],
                    'Vmapped seeds of the jitted loop to measure.')
  harness.define_flags(repeats=3, timing_repeats=20)
  flags.DEFINE_bool('single_threaded', True,
                    'Run XLA on one thread, as a study run does.')
  cli.run(main)
