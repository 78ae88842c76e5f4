r"""Record Atari evaluation episodes once; replay them through the phase rules.

  python -m scripts.experiments.evaluation_rule --mode=record
      [--recording=docs/evaluation/episodes.npz]
  python -m scripts.experiments.evaluation_rule --mode=replay
      [--recording=...] [--num_replications=200] [--output_csv=PATH]

Record: plays each scenario's episodes (a game and a policy that does not look
at the screen) in the evaluation emulator's settings
(zoo.environments.atari_env.make_ale); keeps each episode's length in agent
steps and its non-zero rewards with their steps.

Replay: K streams each play episodes drawn with replacement from a recording,
through zoo.loops.phase_accounting (jitted, vmapped over replications), under
each rule; its bias and RMSE against the mean recorded return, its share of
phases without an estimate, and its cost in budgets. docs/evaluation-rule.md
describes the scenarios, the rules and the results.
"""

import functools
import io
import math
import os
import sys
import time
from typing import Dict, List, NamedTuple, Sequence

from absl import app
from absl import flags
import jax
import jax.numpy as jnp
import numpy as np

from scripts.analysis import tables
from zoo.configuration import cli
from zoo.environments import environment
from zoo.loops import phase_accounting
from zoo.storage import files

FLAGS = flags.FLAGS
DEFAULT_RECORDING = os.path.join('docs', 'evaluation', 'episodes.npz')
REPEATS = 4               # Frames per agent step (DQN Zoo).
MAX_EPISODE_FRAMES = 108_000
EVAL_EPSILON = 0.001      # DQN Zoo's evaluation ε.


class Scenario(NamedTuple):
  game: str
  policy: str        # 'random' (uniform) or 'noop' (NOOP, else ε-uniform).
  epsilon: float
  num_episodes: int
  seed: int


SCENARIOS = {
    'breakout_stuck': Scenario('breakout', 'noop', EVAL_EPSILON, 6, 1),
    'breakout_lazy': Scenario('breakout', 'noop', 0.01, 16, 2),
    'breakout_random': Scenario('breakout', 'random', 1.0, 300, 3),
    'pong_random': Scenario('pong', 'random', 1.0, 40, 4),
    'space_invaders_random': Scenario('space_invaders', 'random', 1.0, 40, 5),
}


class Episodes(NamedTuple):
  """One scenario's recorded episodes."""
  lengths: np.ndarray        # [E] int: agent steps (LAST is the last one).
  event_episode: np.ndarray  # [N] int: the episode of each non-zero reward.
  event_step: np.ndarray     # [N] int: its step, 1..length.
  event_reward: np.ndarray   # [N] float: the step's reward (4 frames).

  def returns(self) -> np.ndarray:
    """Return each episode's (whole) return."""
    return np.bincount(self.event_episode, self.event_reward,
                       minlength=len(self.lengths))


def record_scenario(scenario: Scenario, log=print) -> Episodes:
  """Play the scenario's episodes; return them."""
  from zoo.environments import atari_env  # pylint: disable=g-import-not-at-top
  ale = atari_env.make_ale(scenario.game, scenario.seed)
  actions = np.asarray(ale.getMinimalActionSet())
  rng = np.random.RandomState(scenario.seed)
  lengths, episodes, steps, rewards = [], [], [], []
  for episode in range(scenario.num_episodes):
    ale.reset_game()
    for _ in range(rng.randint(1, 31)):  # No-op frames, not counted.
      ale.act(actions[0])
    frames, step = 0, 0
    done = False
    while not done:
      action = (actions[rng.randint(len(actions))] if scenario.policy ==
                'random' or rng.rand() < scenario.epsilon else actions[0])
      step += 1
      reward = 0.0
      for _ in range(REPEATS):
        reward += ale.act(action)
        frames += 1
        if ale.game_over() or frames >= MAX_EPISODE_FRAMES:
          done = True
          break
      if reward:
        episodes.append(episode)
        steps.append(step)
        rewards.append(reward)
    lengths.append(step)
    if episode % 10 == 9 or scenario.policy == 'noop':
      log(f'{scenario.game} {scenario.policy}: {episode + 1} episodes')
  return Episodes(np.asarray(lengths, np.int32),
                  np.asarray(episodes, np.int32),
                  np.asarray(steps, np.int32),
                  np.asarray(rewards, np.float32))


def save(path: str, recorded: Dict[str, Episodes]) -> None:
  """Write the recording (one NPZ, arrays named scenario/field)."""
  arrays = {f'{name}/{field}': value for name, episodes in recorded.items()
            for field, value in episodes._asdict().items()}
  buffer = io.BytesIO()
  np.savez_compressed(buffer, **arrays)
  files.write_atomically(path, buffer.getvalue())


def load(path: str) -> Dict[str, Episodes]:
  """Read a recording `save` wrote."""
  with np.load(path) as data:
    names = sorted({key.split('/')[0] for key in data.files})
    return {name: Episodes(*(data[f'{name}/{field}']
                             for field in Episodes._fields))
            for name in names}


class Rule(NamedTuple):
  """One phase rule: whole episodes or the budget, and the bound's terms."""
  name: str
  whole_episodes: bool
  overrun: float = math.inf
  cut_rule: str = 'partial'


def rules(overruns: Sequence[float]) -> List[Rule]:
  """Return the rules compared at K > 1."""
  return [Rule('budget', False), Rule('whole episodes', True)] + [
      Rule(f'bounded {overrun:g}x, {cut_rule}', True, overrun, cut_rule)
      for overrun in overruns for cut_rule in ('partial', 'drop')]


def _replay_program(num_streams: int, num_frames: int, rule: Rule):
  """Return a jitted fn(table, lengths, sequences [R, K, J]) -> tallies."""
  def one(table, lengths, sequence):
    last_slot = sequence.shape[1] - 1
    streams = jnp.arange(num_streams)

    def body(carry):
      slot, step, tally, _ = carry
      episode = sequence[streams, jnp.minimum(slot, last_slot)]
      ends = step == lengths[episode]
      step_type = jnp.where(step == 0, environment.FIRST,
                            jnp.where(ends, environment.LAST,
                                      environment.MID)).astype(jnp.int8)
      tally = phase_accounting.count(
          tally, step_type, table[episode, step], num_frames, REPEATS,
          xp=jnp, overrun=rule.overrun, cut_rule=rule.cut_rule)
      done = phase_accounting.is_over(tally, num_frames, rule.whole_episodes,
                                      xp=jnp)
      return (jnp.where(ends, slot + 1, slot), jnp.where(ends, 0, step + 1),
              tally, done)

    zeros = jnp.zeros(num_streams, jnp.int32)
    tally = phase_accounting.start(jnp.zeros(num_streams, jnp.float32),
                                   xp=jnp)
    return jax.lax.while_loop(lambda c: ~c[3], body,
                              (zeros, zeros, tally, jnp.bool_(False)))[2]

  return jax.jit(jax.vmap(one, in_axes=(None, None, 0)))


def replay(episodes: Episodes, num_streams: int, num_frames: int, rule: Rule,
           num_replications: int, seed: int) -> List:
  """Return the PhaseStats of `num_replications` replayed phases."""
  lengths = episodes.lengths
  table = np.zeros((len(lengths), lengths.max() + 1), np.float32)
  table[episodes.event_episode, episodes.event_step] = episodes.event_reward
  # Episodes a stream can start before the budget is spent (then all K
  # streams count); later slots repeat the last, never counted.
  steps_to_spend = -(-num_frames // (num_streams * REPEATS))
  num_slots = steps_to_spend // (lengths.min() + 1) + 2
  rng = np.random.default_rng(seed)
  sequences = rng.integers(0, len(lengths),
                           (num_replications, num_streams, num_slots))
  tallies = jax.device_get(_replay_program(num_streams, num_frames, rule)(
      table, lengths, sequences))
  return [phase_accounting.phase_stats(
      jax.tree.map(lambda x, i=i: x[i], tallies), 1.0)._replace(
          duration=int(tallies.stepped[i]))
          for i in range(num_replications)]


def summarize(scenario: str, truth: float, num_streams: int, num_frames: int,
              rule_name: str, stats: Sequence) -> Dict[str, str]:
  """Return one table row: bias, RMSE, NaN share and cost of a rule."""
  estimates = np.array([s.episode_return for s in stats])
  finite = estimates[np.isfinite(estimates)]
  stepped = np.array([s.duration for s in stats], np.float64) / num_frames
  episodes = sum(s.num_episodes for s in stats)
  cut = sum(s.num_cut for s in stats)
  return {
      'scenario': scenario, 'truth': f'{truth:.3f}',
      'num_streams': str(num_streams), 'budget_frames': str(num_frames),
      'rule': rule_name,
      'bias': f'{finite.mean() - truth:.3f}' if finite.size else 'nan',
      'rmse': (f'{np.sqrt(np.mean((finite - truth) ** 2)):.3f}'
               if finite.size else 'nan'),
      'nan_share': f'{1 - finite.size / len(estimates):.3f}',
      'cut_share': f'{cut / episodes:.3f}' if episodes else 'nan',
      'stepped_mean': f'{stepped.mean():.2f}',
      'stepped_max': f'{stepped.max():.2f}',
  }


CONFIGS = ((1, 500_000), (16, 500_000), (64, 500_000), (16, 4_000))


def measure(recorded: Dict[str, Episodes], overruns: Sequence[float],
            num_replications: int, log=print) -> List[Dict[str, str]]:
  """Return the table rows of every scenario, configuration and rule."""
  rows = []
  for name, episodes in recorded.items():
    truth = float(episodes.returns().mean())
    for seed, (k, budget) in enumerate(CONFIGS):
      compared = ([Rule('DQN Zoo budget', False)] if k == 1 else
                  rules(overruns))
      for rule in compared:
        begin = time.perf_counter()
        stats = replay(episodes, k, budget, rule, num_replications, seed)
        rows.append(summarize(name, truth, k, budget, rule.name, stats))
        log(' '.join(rows[-1].values()) +
            f' ({time.perf_counter() - begin:.1f} s)')
  return rows


def main(unused_argv):
  unknown = [s for s in FLAGS.scenarios if s not in SCENARIOS]
  if unknown:
    raise app.UsageError(f'Unknown scenarios {unknown}; known: '
                         f'{", ".join(SCENARIOS)}.')
  try:
    overruns = [float(x) for x in FLAGS.overruns]
  except ValueError as e:
    raise app.UsageError(f'--overruns: {e}')
  if any(not x > 0 for x in overruns) or FLAGS.num_replications < 1:
    raise app.UsageError('--overruns must be positive and '
                         '--num_replications at least 1.')
  log = functools.partial(print, file=sys.stderr)
  if FLAGS.mode == 'record':
    recorded = {}
    for name in FLAGS.scenarios:
      recorded[name] = record_scenario(SCENARIOS[name], log=log)
      save(FLAGS.recording, recorded)  # Each scenario as soon as it is done.
    log(f'wrote {FLAGS.recording}')
    return
  if not os.path.exists(FLAGS.recording):
    sys.exit(f'Error: no recording at {FLAGS.recording}; record one with '
             '--mode=record.')
  recorded = {name: episodes for name, episodes in load(FLAGS.recording).items()
              if name in FLAGS.scenarios}
  rows = measure(recorded, overruns, FLAGS.num_replications, log=log)
  print('\n'.join(tables.markdown(rows[0], [r.values() for r in rows])))
  if FLAGS.output_csv:
    files.write_csv_atomically(FLAGS.output_csv, list(rows[0]), rows)
    log(f'wrote {FLAGS.output_csv}')


if __name__ == '__main__':
  flags.DEFINE_enum('mode', 'replay', ['record', 'replay'],
                    'record: play the scenarios, write --recording; replay: '
                    'read it, compare the rules.')
  flags.DEFINE_string('recording', DEFAULT_RECORDING, 'The recording (NPZ).')
  flags.DEFINE_list('scenarios', list(SCENARIOS),
                    f'Scenarios to record, from {", ".join(SCENARIOS)}.')
  flags.DEFINE_list('overruns', ['1', '2'],
                    'Bounds compared: frames past the budget, in budgets.')
  flags.DEFINE_integer('num_replications', 100, 'Phases replayed per rule.')
  flags.DEFINE_string('output_csv', None, 'Also write the table here.')
  cli.run(main)
