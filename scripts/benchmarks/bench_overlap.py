"""Benchmark Atari's loops at K streams: the Python loop's orders, the jitted loop.

  python -m scripts.benchmarks.bench_overlap [--environment_name=breakout]
      [--num_envs_list=16,64,128,256] [--num_blocks=16] [--repeats=3]
      [--num_quantiles=N] [--hidden_size=H] [--batch_size=B]

Times one block (one agent step of K streams, and the K x 4 / learn_period
updates due in it, in calls of U = `--num_fused_updates`, unset: one call)
five ways, `--num_blocks` blocks a round: stepping alone (learning off);
learning alone; serial (the Python loop's order); overlapped
(`--overlap_learning`); jitted (`--loop=jitted`, one compiled training phase).
The table holds the overlap goal (overlapped <= 1.15 x max(stepping,
learning)) and every loop's training frames/s; the last line, `figures:`, the
frames/s as JSON. docs/performance.md describes the variants and the flags;
on a CPU this script asks XLA for two host devices
(`--xla_force_host_platform_device_count=2`) unless XLA_FLAGS names a count.
"""

import os
import sys

_COUNT_FLAG = '--xla_force_host_platform_device_count'
# Run as a script only: an importer (a test) keeps its one device.
if (__name__ == '__main__' and 'jax' not in sys.modules and
    _COUNT_FLAG not in os.environ.get('XLA_FLAGS', '')):
  os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') +
                             f' {_COUNT_FLAG}=2').strip()

# pylint: disable=g-import-not-at-top,wrong-import-position
import dataclasses
import time
from typing import Any, Callable, Dict, List

from absl import flags
import jax
import numpy as np

from scripts.benchmarks import bench_agent
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags  # pylint: disable=unused-import
from zoo.loops import jitted_loop
from zoo.suites import atari_suite

# Run flags a measurement may set (the network and the learner's sizes).
OVERRIDABLE = ('num_quantiles', 'hidden_size', 'num_hidden_layers',
               'batch_size', 'learn_period', 'num_fused_updates')
# The variants, in the order of each round.
VARIANTS = ('stepping', 'learning', 'serial', 'overlapped', 'jitted')
# The table's columns: the frames/s of the loops are figures.
COLUMNS = dict({f'{name} ms': ('', '') for name in VARIANTS}, **{
    'overlapped / max': ('', ''), 'serial / max': ('', ''),
    'serial frames/s': ('serial', 'frames/s'),
    'overlapped frames/s': ('overlapped', 'frames/s'),
    'jitted frames/s': ('jitted', 'frames/s'),
    'jitted vs Python loop': ('jitted_vs_python', 'x')})
# Stream counts by JAX platform when --num_envs_list is unset (else: cpu's).
DEFAULT_NUM_ENVS = {'gpu': '16,64,128,256', 'cpu': '16,64'}


def parse_num_envs(text: str) -> List[int]:
  """Return [K] from '16,64'; ValueError naming the fix."""
  try:
    values = [int(item) for item in text.split(',')]
  except ValueError:
    values = []
  if not values or min(values) < 1:
    raise ValueError(f'--num_envs_list={text!r}: write positive stream '
                     'counts separated by commas, e.g. 16,64.')
  return values


def block_updates(num_envs: int, num_action_repeats: int,
                  learn_period: int) -> int:
  """Return the updates due per block; ValueError unless whole."""
  frames = num_envs * num_action_repeats
  if frames % learn_period:
    raise ValueError(f'K = {num_envs}: a block of {frames} frames is not a '
                     f'whole number of learn periods ({learn_period} '
                     'frames); pick K so that it is.')
  return frames // learn_period


def row(ms: Dict[str, float], block_frames: int) -> Dict[str, str]:
  """Return one row of the table from the variants' median ms per block."""
  bound = max(ms['stepping'], ms['learning'])
  cells = {f'{name} ms': f'{ms[name]:.1f}' for name in VARIANTS}
  cells.update({name: f'{ms[name.split()[0]] / bound:.2f}'
                for name in ('overlapped / max', 'serial / max')})
  cells.update({f'{name} frames/s': f'{1e3 * block_frames / ms[name]:,.0f}'
                for name in ('serial', 'overlapped', 'jitted')})
  python_ms = min(ms['serial'], ms['overlapped'])
  cells['jitted vs Python loop'] = f'{python_ms / ms["jitted"]:.3g}x'
  return cells


class Variant(bench_agent.AgentBench):
  """One agent, its replay and its training environment, warmed up."""

  def __init__(self, s, suite, learning: bool, min_replay: int):
    # Fill to the minimum (learning agents compile and run a few blocks).
    blocks = min_replay // s.num_envs + (4 if learning else 1)
    super().__init__(f'K={s.num_envs}', suite, s,
                     blocks * s.num_envs * s.num_action_repeats, learning)
    self.timestep = self.env.reset()

  def run_blocks(self, num_blocks: int) -> float:
    """Step `num_blocks` blocks; return the ms per block, learner waited for."""
    agent, env, timestep = self.agent, self.env, self.timestep
    start = time.perf_counter()
    for _ in range(num_blocks):
      timestep = env.step(agent.step(timestep))
    jax.block_until_ready(agent.online_params)
    self.timestep = timestep
    return 1e3 * (time.perf_counter() - start) / num_blocks


def jitted_settings(s: settings_lib.Settings, num_blocks: int
                    ) -> settings_lib.Settings:
  """Return the jitted loop's settings of the Python loop's `s`: a training
  phase of `num_blocks` blocks, a block's updates in one call."""
  return dataclasses.replace(
      s, loop='jitted', num_fused_updates=1, overlap_learning=False,
      replay_on_device=False,
      num_train_frames=num_blocks * s.num_envs * s.num_action_repeats)


def check_jitted(suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the jitted loop cannot run `s` or its replay can
  never hold the minimum to learn from (before any long work)."""
  held = s.num_envs * (s.replay_capacity // s.num_envs)
  if held < s.min_replay_size():
    raise settings_lib.ConfigError(
        f'K = {s.num_envs}: the jitted loop\'s replay holds {held} '
        f'transitions ({s.replay_capacity // s.num_envs} per stream), fewer '
        f'than the {s.min_replay_size()} it learns from; raise '
        '--bench_replay_capacity or lower --min_replay.')
  jitted_loop.check(suite, s)  # Last: it starts the K emulators.


def settings_at(suite, preset, game: str, num_envs: int, overrides,
                num_blocks, replay_capacity, min_replay):
  """Return the settings at K streams: (resolve(**changes), the Python
  loop's, the jitted loop's, the updates per block); ValueError or
  ConfigError naming the fix (before any long work)."""
  base = dict(settings_lib.default_settings(suite), **overrides)
  updates = block_updates(num_envs, base['num_action_repeats'],
                          base['learn_period'])
  values = dict(
      base, environment_name=game, num_envs=num_envs,
      environment_mode='vector', replay_capacity=replay_capacity,
      min_replay_capacity_fraction=min_replay / replay_capacity,
      num_fused_updates=overrides.get('num_fused_updates', updates),
      results_csv_path='', checkpoint_dir='')
  resolve = lambda **v: settings_lib.resolve_settings(
      suite, preset, dict(values, **v))
  s = resolve()
  settings_lib.validate_settings(suite, s)
  if updates % s.num_fused_updates:
    raise ValueError(f'--num_fused_updates={s.num_fused_updates} must divide '
                     f'the {updates} updates of a block.')
  jitted_s = jitted_settings(s, num_blocks)
  check_jitted(suite, jitted_s)
  return resolve, s, jitted_s, updates


def measure(suite, preset, game: str, num_envs: int, overrides, num_blocks,
            repeats, timing_repeats, replay_capacity, min_replay,
            say: Callable[[str], None] = harness.say
            ) -> Dict[str, Any]:
  """Return the per-round ms per block of every variant at K streams.

  Returns a dict: 'times' (harness.measure's, ms per block), 'settings'
  (the Python loop's), 'updates' (per block), 'device' (the overlapped
  agent's acting device), 'replay_bytes' (the jitted loop's replay).
  """
  resolve, s, jitted_s, updates = settings_at(
      suite, preset, game, num_envs, overrides, num_blocks, replay_capacity,
      min_replay)
  variants = {
      # Learning never starts: the minimum is the whole replay.
      'stepping': Variant(resolve(min_replay_capacity_fraction=1.0), suite,
                          False, min_replay),
      'serial': Variant(s, suite, True, min_replay),
      'overlapped': Variant(resolve(overlap_learning=True), suite, True,
                            min_replay),
  }
  jitted = harness.ready(f'K={num_envs} jitted loop', lambda: (
      bench_agent.JittedPhases(suite, preset, [jitted_s])))
  if jitted.loop.cfg.block_frames != s.num_envs * s.num_action_repeats:
    raise RuntimeError(f'the jitted loop\'s block is '
                       f'{jitted.loop.cfg.block_frames} frames, not one agent '
                       'step of the K streams.')
  learner = variants['serial'].agent
  calls = updates // s.num_fused_updates

  def learn_block():
    losses = [learner.learn() for _ in range(calls)]
    return losses, learner.online_params

  updates_before = jitted.num_updates
  blocks = {name: lambda v=variant: v.run_blocks(num_blocks)
            for name, variant in variants.items()}
  blocks.update(learning=lambda: harness.median_ms(learn_block,
                                                   timing_repeats),
                jitted=lambda: 1e3 * jitted.phase().duration / num_blocks)
  times = harness.measure({name: blocks[name] for name in VARIANTS}, repeats,
                          lambda line: say(f'K={num_envs} {line} ms'))
  if variants['stepping'].agent.num_updates:
    raise RuntimeError('the stepping-alone agent learned; raise '
                       '--bench_replay_capacity.')
  loss = jitted.loop.learners[0].last_loss
  if (jitted.num_updates - updates_before != repeats * num_blocks * updates
      or loss is None or not np.isfinite(loss)):
    raise RuntimeError('the jitted loop did not learn in every timed block.')
  device, = jax.tree.leaves(
      variants['overlapped'].agent.acting_params)[0].devices()
  for variant in variants.values():
    variant.close()
  jitted.close()
  return {'times': times, 'settings': s, 'updates': updates,
          'device': device, 'replay_bytes': jitted.replay_bytes}


def main(argv):
  del argv
  f = flags.FLAGS
  suite = atari_suite.ATARI
  platform = jax.default_backend()
  try:
    num_envs_list = parse_num_envs(f.num_envs_list or DEFAULT_NUM_ENVS.get(
        platform, DEFAULT_NUM_ENVS['cpu']))
  except ValueError as e:
    sys.exit(f'Error: {e}')
  game = (f.environment_name if f['environment_name'].present else 'breakout')
  overrides = {name: getattr(f, name) for name in OVERRIDABLE
               if f[name].present}
  preset = agent_registry.default_preset(f.agent)
  try:  # Refuse before any long work.
    for k in num_envs_list:
      settings_at(suite, preset, game, k, overrides, f.num_blocks,
                  f.bench_replay_capacity, f.min_replay)
  except (ValueError, settings_lib.ConfigError) as e:
    sys.exit(f'Error: {e}')
  print(f'JAX devices: {jax.devices()}; os.cpu_count() = {os.cpu_count()}; '
        f'{game}; agent {f.agent}; K = {",".join(map(str, num_envs_list))}; '
        f'{f.num_blocks} blocks per variant per round, {f.repeats} rounds.',
        flush=True)
  results = {}
  for k in num_envs_list:
    start = time.perf_counter()
    result = measure(suite, preset, game, k, overrides, f.num_blocks,
                     f.repeats, f.timing_repeats, f.bench_replay_capacity,
                     f.min_replay)
    s = result['settings']
    print(f'K={k}: N={s.num_quantiles}, hidden {s.num_hidden_layers}x'
          f'{s.hidden_size}, batch {s.batch_size}, {result["updates"]} '
          f'updates per block in calls of U={s.num_fused_updates} (the '
          f'jitted loop: one call); overlapped acting on {result["device"]}; '
          f'{time.perf_counter() - start:.0f}s', flush=True)
    results[k] = result
  replay_mb = {k: r['replay_bytes'] / 1e6 for k, r in results.items()}
  figures = harness.report(
      'atari.bench_overlap', f'Atari training, agent {f.agent}, {game}',
      ['K'], COLUMNS, {
          str(k): row({n: m[harness.VALUE] for n, m in
                       harness.medians(r['times']).items()},
                      k * r['settings'].num_action_repeats)
          for k, r in results.items()}, 'l' + 'r' * len(COLUMNS))
  print(f'\nframes = agent steps x K x 4 (a block: one agent step of the K '
        'streams); medians of the rounds. Every variant\'s replay holds '
        f'{f.bench_replay_capacity:,} transitions, learning from '
        f'{f.min_replay:,}: small for the benchmark (DQN Zoo: 1M); the '
        'jitted loop\'s, on the device: ' + ', '.join(
            f'{mb:.0f} MB at K={k}' for k, mb in replay_mb.items()) + '.')
  harness.print_figures(figures)


if __name__ == '__main__':
  flags.DEFINE_enum('agent', 'cr_dqn', list(agent_registry.agent_packages()),
                    'Agent package (its default preset).')
  flags.DEFINE_string('num_envs_list', '',
                      'Stream counts K to measure, comma separated; empty: '
                      f'{DEFAULT_NUM_ENVS["gpu"]} on a GPU, '
                      f'{DEFAULT_NUM_ENVS["cpu"]} on a CPU.')
  flags.DEFINE_integer('num_blocks', 16,
                       'Blocks per variant per round (one timing; the '
                       'jitted loop: one training phase).')
  flags.DEFINE_integer('bench_replay_capacity', 20_000,
                       'Replay transitions per variant (the jitted loop\'s '
                       'too, on the device).')
  flags.DEFINE_integer('min_replay', 1_000,
                       'Transitions held before learning starts.')
  harness.define_flags(repeats=3, timing_repeats=5)
  cli.run(main)
