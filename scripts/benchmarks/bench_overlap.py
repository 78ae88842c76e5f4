"""Benchmark overlapping the emulators' steps with the learner's updates.

Times one block (one agent step of K streams: acting, K emulator steps with
preprocessing, storing, and the K x 4 / 16 updates that fall due in it, run
as one fused dispatch) four ways, in turns within one process (round robin,
`--repeats` rounds; the table shows medians):

- stepping alone: the agent's step with learning off (act, step, store);
- learning alone: the block's updates, one fused call waited for (host
  sampling of the batches included);
- serial: the Python loop's order (`--overlap_learning` off: the next action
  selection waits for the block's updates);
- overlapped: `--overlap_learning` (acting on the snapshot of the parameters
  from before the block, on the second JAX device, while the updates run).

The goal: overlapped <= 1.15 x max(stepping, learning). On a CPU host two
computations run at once only on two devices: this script asks XLA for two
host devices (`--xla_force_host_platform_device_count=2`) unless XLA_FLAGS
already names a count.

  python -m scripts.benchmarks.bench_overlap [--environment_name=breakout]
      [--num_envs_list=16,64] [--num_blocks=16] [--repeats=3]
      [--num_quantiles=N] [--hidden_size=H] [--batch_size=B]

Network settings (`--num_quantiles`, `--hidden_size`, `--num_hidden_layers`,
`--batch_size`, `--learn_period`, `--num_fused_updates`) are the run flags;
unset, the suite's defaults (U unset: the block's K x 4 / learn_period
updates in one call).
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
import statistics
import time
from typing import Dict, List

from absl import flags
import jax

from scripts.benchmarks import timing
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags  # pylint: disable=unused-import
from zoo.loops import build
from zoo.loops import python_loop
from zoo.suites import atari_suite

# Run flags a measurement may set (the network and the learner's sizes).
OVERRIDABLE = ('num_quantiles', 'hidden_size', 'num_hidden_layers',
               'batch_size', 'learn_period', 'num_fused_updates')
COLUMNS = ('stepping ms', 'learning ms', 'serial ms', 'overlapped ms',
           'overlapped / max', 'serial / max', 'overlapped frames/s')


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


def row(times: Dict[str, List[float]], block_frames: int) -> Dict[str, str]:
  """Return one table row from per-round block times (ms) by variant."""
  median = {name: statistics.median(values) for name, values in times.items()}
  bound = max(median['stepping'], median['learning'])
  return {
      'stepping ms': f'{median["stepping"]:.1f}',
      'learning ms': f'{median["learning"]:.1f}',
      'serial ms': f'{median["serial"]:.1f}',
      'overlapped ms': f'{median["overlapped"]:.1f}',
      'overlapped / max': f'{median["overlapped"] / bound:.2f}',
      'serial / max': f'{median["serial"] / bound:.2f}',
      'overlapped frames/s': f'{1e3 * block_frames / median["overlapped"]:.0f}',
  }


class Variant:
  """One agent, its replay and its training environment, warmed up."""

  def __init__(self, settings, suite, learning: bool, min_replay: int):
    s = self.settings = settings
    self.env = build.make_environment_factory(suite, s)(1, 'train')
    self.agent, self.replay = build.build_agent(suite, s,
                                                self.env.num_actions)
    self.timestep = self.env.reset()
    # Fill to the minimum (learning agents compile and run a few blocks).
    steps = min_replay // s.num_envs + (4 if learning else 1)
    self.run_blocks(steps)
    if learning != (self.agent.num_updates > 0):
      raise RuntimeError('the warm-up did not leave the agent '
                         f'{"learning" if learning else "not learning"}.')

  def run_blocks(self, num_blocks: int) -> float:
    """Step `num_blocks` blocks; return the ms per block, learner waited for."""
    agent, env, timestep = self.agent, self.env, self.timestep
    start = time.perf_counter()
    for _ in range(num_blocks):
      timestep = env.step(agent.step(timestep))
    jax.block_until_ready(agent.online_params)
    self.timestep = timestep
    return 1e3 * (time.perf_counter() - start) / num_blocks

  def close(self):
    self.env.close()


def measure(suite, preset, game: str, num_envs: int, overrides, num_blocks,
            repeats, timing_repeats, replay_capacity, min_replay):
  """Return ({variant: [ms per block per round]}, settings) at K streams."""
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
  variants = {
      # Learning never starts: the minimum is the whole replay.
      'stepping': Variant(resolve(min_replay_capacity_fraction=1.0), suite,
                          False, min_replay),
      'serial': Variant(s, suite, True, min_replay),
      'overlapped': Variant(resolve(overlap_learning=True), suite, True,
                            min_replay),
  }
  learner = variants['serial'].agent
  calls = updates // s.num_fused_updates

  def learn_block():
    losses = [learner.learn() for _ in range(calls)]
    return losses, learner.online_params

  times = {name: [] for name in ('stepping', 'learning', 'serial',
                                 'overlapped')}
  for round_index in range(repeats):
    for name, variant in variants.items():
      times[name].append(variant.run_blocks(num_blocks))
      if name == 'stepping':
        times['learning'].append(timing.median_ms(learn_block, timing_repeats))
    print(f'K={num_envs} round {round_index + 1}/{repeats}: ' + ', '.join(
        f'{name} {values[-1]:.1f}' for name, values in times.items()) +
          ' ms per block', flush=True)
  if variants['stepping'].agent.num_updates:
    raise RuntimeError('the stepping-alone agent learned; raise '
                       '--bench_replay_capacity.')
  device, = jax.tree.leaves(
      variants['overlapped'].agent.acting_params)[0].devices()
  for variant in variants.values():
    variant.close()
  return times, s, updates, device


def main(argv):
  del argv
  f = flags.FLAGS
  suite = atari_suite.ATARI
  try:
    num_envs_list = parse_num_envs(f.num_envs_list)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  game = (f.environment_name if f['environment_name'].present else 'breakout')
  overrides = {name: getattr(f, name) for name in OVERRIDABLE
               if f[name].present}
  preset = agent_registry.default_preset(f.agent)
  defaults = settings_lib.default_settings(suite)
  try:  # Refuse before any long work.
    for k in num_envs_list:
      block_updates(k, defaults['num_action_repeats'],
                    overrides.get('learn_period', defaults['learn_period']))
    settings_lib.validate_settings(suite, settings_lib.resolve_settings(
        suite, preset, dict(defaults, **overrides, environment_name=game,
                            results_csv_path='', checkpoint_dir='')))
  except (ValueError, settings_lib.ConfigError) as e:
    sys.exit(f'Error: {e}')
  print(f'JAX devices: {jax.devices()}; os.cpu_count() = {os.cpu_count()}; '
        f'{game}; agent {f.agent}; {f.num_blocks} blocks per variant per '
        f'round, {f.repeats} rounds.', flush=True)
  rows = {}
  for k in num_envs_list:
    start = time.perf_counter()
    times, s, updates, device = measure(
        suite, preset, game, k, overrides, f.num_blocks, f.repeats,
        f.timing_repeats, f.bench_replay_capacity, f.min_replay)
    print(f'K={k}: N={s.num_quantiles}, hidden {s.num_hidden_layers}x'
          f'{s.hidden_size}, batch {s.batch_size}, {updates} updates per '
          f'block in calls of U={s.num_fused_updates}; overlapped acting on '
          f'{device}; {time.perf_counter() - start:.0f}s', flush=True)
    rows[f'K={k}'] = row(times, k * s.num_action_repeats)
  print()
  print('| K | ' + ' | '.join(COLUMNS) + ' |')
  print('|' + '---|' * (len(COLUMNS) + 1))
  for name, values in rows.items():
    print(f'| {name} | ' + ' | '.join(values[c] for c in COLUMNS) + ' |')


if __name__ == '__main__':
  flags.DEFINE_enum('agent', 'cr_dqn', list(agent_registry.agent_packages()),
                    'Agent package (its default preset).')
  flags.DEFINE_string('num_envs_list', '16,64',
                      'Stream counts K to measure, comma separated.')
  flags.DEFINE_integer('num_blocks', 16,
                       'Blocks per variant per round (one timing).')
  flags.DEFINE_integer('repeats', 3, 'Rounds over the variants (median).')
  flags.DEFINE_integer('timing_repeats', 5,
                       'Timed learning-alone blocks per round (median).')
  flags.DEFINE_integer('bench_replay_capacity', 20_000,
                       'Replay transitions per variant.')
  flags.DEFINE_integer('min_replay', 1_000,
                       'Transitions held before learning starts.')
  cli.run(main)
