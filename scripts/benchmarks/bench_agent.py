"""Benchmark training throughput: the reference mode against faster modes.

  python -m scripts.benchmarks.bench_agent [--environment_name=pong] [--agent=cr_dqn]
      [--modes=reference:1,vector:16,vector:16:u4,vector:16:u4:device]
      [--num_frames=2048] [--repeats=3] [--bench_replay_capacity=100000]
  python -m scripts.benchmarks.bench_agent --suite=minatar --modes=reference:1,reference:1:u4

A mode is ENV:K[:uU][:device]: the environment mode (reference: one Python
DQN Zoo environment; vector: ale_py.AtariVectorEnv) and K streams, U fused
updates per dispatch, the replay on the JAX device. Every mode learns (one
update every 16 frames, as a real run); each round trains `--num_frames`
frames per mode, then times its parts (medians of `--timing_repeats` calls).

Columns (medians of the rounds): training frames/s and updates/s; one
update's time (with the device replay, sampling included) and its share of the
loop (updates/s x update time); acting and env time per frame; the host
replay's sample(32) time; the memory each mode added after its warm-up. Then
`speed-up: X`, the best mode's frames/s over the reference mode's, and the
last line, `figures:`, the figures as JSON.

The other benchmarks build on its benches: AgentBench (an agent of the Python
loop, learning) and JittedPhases (a jitted loop's training phases).
"""

import re
import resource
import sys
from typing import NamedTuple

from absl import flags
import jax
import numpy as np

from scripts.analysis import tables
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags  # pylint: disable=unused-import
from zoo.environments import minatar_env
from zoo.loops import build
from zoo.loops import jitted_loop
from zoo.loops import python_loop
from zoo.suites import atari_suite
from zoo.suites import minatar_suite

SUITES = {'atari': atari_suite.ATARI, 'minatar': minatar_suite.MINATAR}

_DQN_ZOO = {  # DeepMind's DQN Zoo QR-DQN, as reported on a comparable CPU.
    'frames/s': '189-205', 'update ms': '58', 'act ms/frame': '0.30',
    'env ms/frame': '0.6'}


class Mode(NamedTuple):
  environment_mode: str   # 'reference' or 'vector'.
  num_envs: int           # K.
  num_fused_updates: int = 1
  replay_on_device: bool = False

  @property
  def name(self) -> str:
    name = f'{self.environment_mode} K={self.num_envs}'
    if self.num_fused_updates > 1:
      name += f' U={self.num_fused_updates}'
    return name + (' device replay' if self.replay_on_device else '')


def parse_modes(text: str):
  """Return [Mode] from 'reference:1,vector:16,vector:16:u4:device'."""
  modes = []
  for item in text.split(','):
    match = re.fullmatch(r'(reference|vector):([1-9]\d*)(?::u([1-9]\d*))?'
                         r'(:device)?', item.strip())
    if not match:
      raise ValueError(f'Bad mode {item!r}: write ENV:K[:uU][:device] with ENV '
                       'reference or vector, K >= 1 streams, U >= 1 fused '
                       'updates, e.g. vector:16 or vector:16:u4:device.')
    environment_mode, k, u, device = match.groups()
    modes.append(Mode(environment_mode, int(k), int(u or 1), bool(device)))
  if modes[0] != Mode('reference', 1):
    raise ValueError('The first mode must be reference:1 (the baseline of '
                     'the speed-up).')
  return modes


def part_ms(agent, env, observation, epsilon: float, repeats: int):
  """Return the ms of the agent's action selection for the K streams of
  `observation` and of one step of the K streams of `env` (random actions):
  medians of `repeats` calls."""
  select = agent._select_action  # pylint: disable=protected-access
  key = jax.random.PRNGKey(0)
  rng = np.random.default_rng(0)
  env.reset()
  return {'act': harness.median_ms(lambda: select(
      agent.online_params, key, observation, epsilon), repeats),
          'env': harness.median_ms(lambda: env.step(
              rng.integers(0, env.num_actions, env.num_envs)), repeats)}


class AgentBench:
  """An agent, its replay and its training environment under settings `s`,
  trained `warm_frames` frames: past the replay's minimum and learning, as
  in the middle of a run (learning=False: not learning yet); rss_added: the
  memory this took."""

  def __init__(self, name: str, suite, s: settings_lib.Settings,
               warm_frames: int, learning: bool = True):
    self.name, self.settings, self.num_envs = name, s, s.num_envs
    rss_before = harness.rss_bytes()
    self.env = build.make_environment_factory(suite, s)(1, 'train')
    self.agent, self.replay = build.build_agent(suite, s,
                                                self.env.num_actions)
    python_loop.run_phase(self.env, self.agent.step, warm_frames,
                          s.num_action_repeats)
    if learning != (self.agent.num_updates > 0):
      raise RuntimeError(f'{name}: the warm-up did not leave the agent '
                         f'{"learning" if learning else "not learning"}.')
    self.rss_added = harness.rss_bytes() - rss_before

  def train(self, num_frames: int):
    """Run one training phase; return its frames/s and updates/s."""
    updates_before = self.agent.num_updates
    stats = python_loop.run_phase(self.env, self.agent.step, num_frames,
                                  self.settings.num_action_repeats)
    jax.block_until_ready(self.agent.online_params)
    return {'frames/s': stats.frame_rate, 'updates/s': (
        self.agent.num_updates - updates_before) / stats.duration}

  def close(self):
    self.env.close()


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
    self.phase()  # Compiles the phase's one chunk.
    while self.num_updates == 0:
      self.phase()

  def phase(self):
    """Run one training phase; return the first seed's PhaseStats (its
    frames and seconds, synchronised)."""
    self.iteration += 1
    return self.loop.train(self.iteration, lambda frames: None)[0].stats

  @property
  def num_updates(self) -> int:
    return self.loop.cfg.updates_done(self.loop.frame_t)

  def close(self) -> None:
    self.loop.close()


class ModeBench(AgentBench):
  """One mode's agent, replay and training environment, warmed up."""

  def __init__(self, suite, preset, game, mode: Mode, replay_capacity,
               min_replay):
    self.mode = mode
    s = settings_lib.resolve_settings(suite, preset, dict(
        settings_lib.default_settings(suite), environment_name=game,
        replay_capacity=replay_capacity, num_envs=mode.num_envs,
        environment_mode=mode.environment_mode,
        num_fused_updates=mode.num_fused_updates,
        replay_on_device=mode.replay_on_device,
        min_replay_capacity_fraction=min_replay / replay_capacity,
        results_csv_path='', checkpoint_dir=''))
    settings_lib.validate_settings(suite, s)
    super().__init__(mode.name, suite, s, s.num_action_repeats * (
        min_replay + 64 * mode.num_envs))

  def measure_round(self, repeats, num_frames):
    """Measure one training phase, then each component, in this round."""
    agent, frames = self.agent, self.settings.num_action_repeats * self.num_envs
    out = self.train(num_frames)
    parts = part_ms(agent, self.env, self.replay.sample(self.num_envs).s_t,
                    0.01, repeats)
    out.update({
        'update': harness.median_ms(agent.learn, repeats) /
                  self.mode.num_fused_updates,
        'act': parts['act'] / frames, 'env': parts['env'] / frames,
        'sample': harness.median_ms(
            lambda: self.replay.sample(32, stacks_last=False), repeats)})
    return out

  def row(self, m):
    """Return the table's cells of this mode's medians `m`."""
    return {
        'frames/s': f'{m["frames/s"]:.0f}',
        'updates/s': f'{m["updates/s"]:.1f}',
        'update ms': f'{m["update"]:.1f}',
        'update share': f'{m["updates/s"] * m["update"] / 1e3:.0%}',
        'act ms/frame': f'{m["act"]:.3f}',
        'env ms/frame': f'{m["env"]:.3f}',
        'sample ms': ('-' if self.mode.replay_on_device else
                      f'{m["sample"]:.2f}'),
        'memory added GB': f'{self.rss_added / 1e9:.2f}',
    }

def main(argv):
  del argv
  f = flags.FLAGS
  modes = parse_modes(f.modes)
  suite = SUITES[f.suite]
  if suite is minatar_suite.MINATAR:
    try:
      minatar_env.check_installed()
    except minatar_env.NotInstalledError as e:
      sys.exit(f'Error: {e}')
  game = (f.environment_name if f['environment_name'].present else
          settings_lib.default_settings(suite)['environment_name'])
  print(f'JAX device: {jax.devices()[0]}; {suite.name} {game}; agent '
        f'{f.agent}; {f.num_frames} frames per mode per round, {f.repeats} '
        'rounds.', flush=True)
  benches = [harness.ready(mode.name, lambda mode=mode: ModeBench(
      suite, agent_registry.default_preset(f.agent), game, mode,
      f.bench_replay_capacity, f.min_replay)) for mode in modes]
  s = benches[0].settings
  print(f'batch {s.batch_size}, N={s.num_quantiles}; one update per '
        f'{s.learn_period} frames.', flush=True)
  medians = harness.medians(harness.measure(
      {b.name: lambda b=b: b.measure_round(f.timing_repeats, f.num_frames)
       for b in benches}, f.repeats))
  for bench in benches:
    bench.close()
  rows = {b.name: b.row(medians[b.name]) for b in benches}
  what = f'training, {suite.name} {game}, agent {f.agent}'
  figures = harness.report('training.bench_agent', what, ['mode'], COLUMNS,
                           rows)
  if suite is atari_suite.ATARI:
    print(tables.line(['DQN Zoo QR-DQN (not rerun; measured before on this '
                       '2-core machine)'] + [_DQN_ZOO.get(c, '')
                                             for c in COLUMNS]))
  peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6
  print(f'\nprocess peak resident memory: {peak:.2f} GB')
  rates = {b.name: medians[b.name]['frames/s'] for b in benches}
  best = max(rates, key=rates.get)
  speedup = f'{rates[best] / rates[benches[0].name]:.2f}'
  print(f'best mode: {best}')
  print(f'speed-up: {speedup}')
  harness.print_figures(
      figures + [harness.figure(
          'training.bench_agent.speedup', f'{what}: frames/s of the best '
          f'mode ({best}) over the reference mode\'s', speedup, 'x')])


# Each column's quantity in the figure keys, and its unit.
COLUMNS = {'frames/s': ('frames_per_s', 'frames/s'),
           'updates/s': ('updates_per_s', 'updates/s'),
           'update ms': ('update_ms', 'ms'),
           'update share': ('update_share', '%'),
           'act ms/frame': ('act_ms_per_frame', 'ms'),
           'env ms/frame': ('env_ms_per_frame', 'ms'),
           'sample ms': ('sample_ms', 'ms'),
           'memory added GB': ('memory_added', 'GB')}


if __name__ == '__main__':
  # --environment_name is a run flag (zoo.configuration.settings_flags; unset: the suite's
  # default game, pong or breakout).
  flags.DEFINE_enum('suite', 'atari', sorted(SUITES), 'Family of games.')
  flags.DEFINE_enum('agent', 'cr_dqn', list(agent_registry.agent_packages()),
                    'Agent package (its default preset).')
  flags.DEFINE_string('modes', 'reference:1,vector:1,vector:4,vector:8,'
                      'vector:16,vector:16:u4,vector:16:device,'
                      'vector:16:u4:device',
                      'ENV:K[:uU][:device] items; the first is the baseline.')
  flags.DEFINE_integer('num_frames', 2048,
                       'Measured training frames per mode per round.')
  flags.DEFINE_integer('bench_replay_capacity', 100_000,
                       'Replay transitions per mode (sampling is O(1) in it).')
  flags.DEFINE_integer('min_replay', 1000,
                       'Transitions held before learning starts.')
  harness.define_flags(repeats=3, timing_repeats=5)
  cli.run(main)
