"""Benchmark one Atari 100k run on this machine: its rates and its duration.

  python -m scripts.benchmarks.bench_atari100k [--presets=QR-DQN-1,CR-DQN]
      [--environment_name=pong] [--slice_frames=2000] [--repeats=3]
      [--eval_episode_frames=0] [--goal_minutes=20]

Builds, per preset (any package's), the real Python loop of
`--protocol=atari100k`, trains it past the learning start, then measures the
presets in turns: per round a training slice of `--slice_frames` frames, the
update, acting and emulator times, and one whole evaluation episode. It prints
their medians [min, max] and the estimate of one whole run (training and
evaluation at the measured rates) beside `--goal_minutes`; the last line,
`figures:`, holds the figures as JSON. docs/performance.md describes the
measurements and the estimate.
"""

import dataclasses
import sys
from typing import Dict, List

from absl import flags
import jax

from scripts.benchmarks import bench_agent
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.configuration import settings as settings_lib
from zoo.configuration import settings_flags  # pylint: disable=unused-import
from zoo.loops import build
from zoo.loops import python_loop
from zoo.suites import atari_suite

PROTOCOL = 'atari100k'
DEFAULT_GAME = 'pong'
# The measured quantities of every round, in the table's order, and the
# quantity and unit of the figures of some.
QUANTITIES = {'train frames/s': ('train_frames_per_s', 'frames/s'),
              'updates/s': ('', ''), 'update ms': ('', ''),
              'update share': ('update_share', '%'),
              'act ms/frame': ('', ''), 'env ms/frame': ('', ''),
              'eval frames/s': ('eval_frames_per_s', 'frames/s'),
              'eval episode frames': ('', '')}


def protocol_settings(preset, game: str) -> settings_lib.Settings:
  """Return the settings of a run of `preset` under the protocol on `game`
  (nothing written); ConfigError naming a bad setting."""
  suite = atari_suite.ATARI
  s = settings_lib.resolve_settings(suite, preset, dict(
      protocol=PROTOCOL, environment_name=game, results_csv_path='',
      checkpoint_dir='', tensorboard_dir=''))
  settings_lib.validate_settings(suite, s)
  return s


def bench_settings(s: settings_lib.Settings, slice_frames: int
                   ) -> settings_lib.Settings:
  """Return the run `s` cut into training phases of `slice_frames`.

  The run's training frames stay (and with them the ε decay, a fraction of
  them); every evaluation is one whole episode.
  """
  total = s.num_iterations * s.num_train_frames
  if (slice_frames <= 0 or slice_frames % s.num_action_repeats or
      total % slice_frames):
    raise ValueError(f'--slice_frames={slice_frames}: pick a positive '
                     f'multiple of {s.num_action_repeats} frames (an agent '
                     f'step) that divides the run\'s {total:,} training '
                     'frames, e.g. 2000.')
  return dataclasses.replace(
      s, num_train_frames=slice_frames, num_iterations=total // slice_frames,
      num_eval_episodes=1, num_final_eval_episodes=0)


def run_eval_episodes(s: settings_lib.Settings) -> int:
  """Return the whole evaluation episodes of run `s` (iterations 0 to last)."""
  episodes = [s.eval_episodes(i) for i in range(s.num_iterations + 1)]
  if not all(episodes):
    raise ValueError('The run evaluates a frame budget, not whole episodes.')
  return sum(episodes)


def warmup_slices(s: settings_lib.Settings) -> int:
  """Return the training slices of `s` after which it learns (compiled) at
  every agent step: the last one passes the learning start."""
  steps_per_slice = s.num_train_frames // s.num_action_repeats
  return s.min_replay_size() // steps_per_slice + 1


def estimates(stats: Dict[str, harness.Stats], train_frames: int,
              eval_episodes: int, episode_frames: float
              ) -> Dict[str, Dict[str, float]]:
  """Return the minutes of training, evaluation and the whole run at the
  median rates and at the slowest and fastest.

  stats: harness.summary()'s of one preset. Returns
  {'median'|'slowest'|'fastest': {'train min'|'eval min'|'total min': x}}.
  """
  out = {}
  for name, key in (('median', 'median'), ('slowest', 'low'),
                    ('fastest', 'high')):
    train = train_frames / getattr(stats['train frames/s'], key) / 60
    evaluation = (eval_episodes * episode_frames /
                  getattr(stats['eval frames/s'], key) / 60)
    out[name] = {'train min': train, 'eval min': evaluation,
                 'total min': train + evaluation}
  return out


def fmt(value: float) -> str:
  """Return a figure to three significant digits (thousands separated)."""
  if abs(value) >= 100:
    return f'{value:,.0f}'
  return f'{value:.3g}'


def cell(s: harness.Stats, percent: bool = False) -> str:
  """Return 'median [min, max]' of a harness.Stats."""
  f = (lambda v: f'{v:.0%}') if percent else fmt
  return f'{f(s.median)} [{f(s.low)}, {f(s.high)}]'


class PresetBench:
  """One preset's protocol run: the real Python loop, past the learning start.

  make_loop, make_env: the real ones by default (tests pass fakes).
  """

  def __init__(self, preset, s: settings_lib.Settings, make_loop=None,
               make_env=None):
    suite = atari_suite.ATARI
    self.name = preset.name
    self.settings = s
    make_loop = make_loop or (lambda: python_loop.make(suite, preset, [s]))
    make_env = make_env or (
        lambda: build.make_environment_factory(suite, s)(0, 'train'))
    self.loop = make_loop()
    self.agent = self.loop.learners[0]
    self.env = make_env()  # For the emulator's time alone.
    self.iteration = 0
    for _ in range(warmup_slices(s)):
      self._train()
    if self.agent.num_updates == 0:
      raise RuntimeError(f'{self.name}: no update during the warm-up.')

  def _train(self):
    self.iteration += 1
    result, = self.loop.train(self.iteration, None)
    jax.block_until_ready(self.agent.online_params)
    return result.stats

  def measure_round(self, timing_repeats: int) -> Dict[str, float]:
    """Measure one training slice, the components and one evaluation episode;
    return this round's values by quantity."""
    agent, s = self.agent, self.settings
    updates_before = agent.num_updates
    stats = self._train()
    values = {'train frames/s': stats.frame_rate,
              'updates/s': (agent.num_updates - updates_before) /
                           stats.duration}
    values['update ms'] = harness.median_ms(agent.learn, timing_repeats)
    values['update share'] = values['updates/s'] * values['update ms'] / 1e3
    parts = bench_agent.part_ms(agent, self.env, self.env.reset().observation,
                                agent.exploration_epsilon, timing_repeats)
    values['act ms/frame'] = parts['act'] / s.num_action_repeats
    values['env ms/frame'] = parts['env'] / s.num_action_repeats
    evaluation, = self.loop.evaluate(self.iteration, None)
    if evaluation.num_episodes != 1:
      raise RuntimeError(f'{self.name}: the evaluation ran '
                         f'{evaluation.num_episodes} episodes, not one.')
    values['eval frames/s'] = evaluation.frame_rate
    values['eval episode frames'] = float(evaluation.num_frames)
    return values

  def close(self):
    self.loop.close()
    self.env.close()


def report(results: harness.Results, train_frames: int, eval_episodes: int,
           episode_frames: float, goal_minutes: float, game: str
           ) -> List[Dict[str, str]]:
  """Print the tables of the rounds by preset; return their figures.

  episode_frames: > 0: the evaluation episode length of the estimate; 0:
  each preset's median measured length.
  """
  stats = harness.summary(results)
  prefix = 'atari100k.bench_atari100k'
  what = f'Atari 100k on {game} (`bench_atari100k`)'
  figures = harness.report(
      prefix, what, ['agent'], QUANTITIES,
      {name: {q: cell(s[q], q == 'update share') for q in QUANTITIES}
       for name, s in stats.items()}, 'l' + 'r' * len(QUANTITIES))
  columns = {'episode frames': ('', ''), 'training min': ('', ''),
             'evaluation min': ('', ''),
             'whole run min [min, max]': ('whole_run_min', 'min'),
             f'vs {fmt(goal_minutes)} min': ('', '')}
  rows = {}
  for name, s in stats.items():
    length = episode_frames or s['eval episode frames'].median
    runs = estimates(s, train_frames, eval_episodes, length)
    median = runs['median']
    rows[name] = dict(zip(columns, (
        fmt(length), fmt(median['train min']), fmt(median['eval min']),
        f'{fmt(median["total min"])} [{fmt(runs["fastest"]["total min"])}, '
        f'{fmt(runs["slowest"]["total min"])}]',
        f'{median["total min"] / goal_minutes:.2f}x')))
  return figures + harness.report(prefix, f'{what}, one whole run, estimated',
                                  ['agent'], columns, rows, 'lrrrrr')


def main(argv):
  del argv
  f = flags.FLAGS
  game = f.environment_name if f['environment_name'].present else DEFAULT_GAME
  presets = [agent_registry.presets()[name] for name in f.presets]
  try:  # Refuse before any long work.
    if f.eval_episode_frames < 0 or f.goal_minutes <= 0:
      raise ValueError('--eval_episode_frames must be >= 0 (0: measured) and '
                       '--goal_minutes positive.')
    runs = {p.name: protocol_settings(p, game) for p in presets}
    benched = {name: bench_settings(s, f.slice_frames)
               for name, s in runs.items()}
  except (ValueError, settings_lib.ConfigError) as e:
    sys.exit(f'Error: {e}')
  s = next(iter(runs.values()))
  train_frames = s.num_iterations * s.num_train_frames
  eval_episodes = run_eval_episodes(s)
  print(f'machine: {harness.machine()}', flush=True)
  print(f'Atari 100k (--protocol={PROTOCOL}) on {game}: the Python loop at '
        f'K = {s.num_envs}; per round and preset a training slice of '
        f'{f.slice_frames:,} frames past the learning start '
        f'({s.min_replay_size():,} agent steps), the update, acting and '
        'emulator times, and one whole evaluation episode at ε = '
        f'{s.eval_exploration_epsilon}; {f.repeats} rounds.', flush=True)
  benches = []
  try:
    for p in presets:
      benches.append(harness.ready(p.name, lambda p=p: PresetBench(
          p, benched[p.name])))
    results = harness.measure(
        {b.name: lambda b=b: b.measure_round(f.timing_repeats)
         for b in benches}, f.repeats,
        lambda line: harness.say(line + ' training frames/s'))
  finally:
    for bench in benches:
      bench.close()
  figures = report(results, train_frames, eval_episodes,
                   f.eval_episode_frames, f.goal_minutes, game)
  length = (f'{f.eval_episode_frames:,} frames (--eval_episode_frames)'
            if f.eval_episode_frames else
            'the median of the evaluation episodes measured here, of an '
            'agent trained for a few thousand frames (a trained agent\'s may '
            'be longer; set --eval_episode_frames)')
  print(f'\nMedians of {f.repeats} rounds [min, max]. update share = '
        'updates/s x update ms. One whole run: '
        f'{train_frames:,} training frames at the training rate (the '
        f'warm-up\'s {s.min_replay_size() * s.num_action_repeats:,} frames, '
        'which run no updates, included) plus '
        f'{eval_episodes} evaluation episodes x {length}, at the evaluation '
        f'rate; the goal: {fmt(f.goal_minutes)} minutes.')
  harness.print_figures(figures)


if __name__ == '__main__':
  # --environment_name is a run flag (zoo.configuration.settings_flags);
  # unset: pong.
  harness.define_choices('presets', ['QR-DQN-1', 'CR-DQN'],
                         list(agent_registry.presets()),
                         'Agent presets (any package\'s)')
  flags.DEFINE_integer('slice_frames', 2_000,
                       'Training frames measured per preset per round.')
  flags.DEFINE_integer('eval_episode_frames', 0,
                       'Frames of an evaluation episode in the estimate; 0: '
                       'the median of the measured episodes.')
  flags.DEFINE_float('goal_minutes', 20.0,
                     'The goal for one whole run, in minutes.')
  harness.define_flags(repeats=3, timing_repeats=5)
  cli.run(main)
