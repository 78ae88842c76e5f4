"""The Python loop (--loop=python): one seed's agent steps Python environments.

A zoo.loops.driver adapter: evaluation on a fresh environment of (seed,
iteration, 'eval'), training on zoo.loops.train_streams. A resume is exact
at K = 1 and restarts the training streams at K > 1.
"""

import time
from typing import Callable, List, Optional, Sequence

from absl import logging
import jax
import numpy as np

from zoo.configuration import settings as settings_lib
from zoo.environments import environment
from zoo.loops import build
from zoo.loops import driver
from zoo.loops import phase_accounting
from zoo.loops import resume
from zoo.loops import train_streams as train_streams_lib
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read


def vmaps_seeds(suite) -> bool:
  """Return False: the runner runs each seed as its own group."""
  del suite
  return False


def run_phase(env: environment.BatchedEnvironment,
              act: Callable[[environment.BatchedTimeStep], np.ndarray],
              num_frames: int, num_action_repeats: int, *,
              whole_episodes: bool = False,
              on_step: Optional[Callable[[int, str], None]] = None,
              num_episodes: int = 0) -> phase_accounting.PhaseStats:
  """Run `act` on every stream of a fresh environment for one phase.

  Counted by zoo.loops.phase_accounting: the budget rule, or `whole_episodes`
  within a bound (evaluation at K > 1, docs/evaluation-rule.md).

  Args:
    act: fn(timestep) -> [K] actions (the agent's step or eval_step).
    num_frames: the phase's frame budget (positive, else ValueError).
    on_step: fn(frames counted, status) after every step (status:
      phase_accounting.past_budget's for whole episodes, else ''); it may
      raise to abandon the phase.
    num_episodes: > 0: exactly that many whole episodes instead of the
      budget (each ended by its game or the environment's frame cap).
  """
  if num_frames <= 0:
    raise ValueError(
        f'A phase needs a positive frame budget, got {num_frames}.')
  start = time.perf_counter()

  def report(tally):
    if num_episodes:
      status = f'{int(tally.num_episodes)} of {num_episodes} episodes'
    elif whole_episodes:
      status = phase_accounting.past_budget(tally, num_frames)
    else:
      status = ''
    on_step(int(tally.frames), status)

  _, tally = phase_accounting.run_steps(
      env.reset(), env.step, act,
      phase_accounting.start(np.zeros(env.num_envs, np.float64)), num_frames,
      num_action_repeats, whole_episodes, on_tally=report if on_step else None,
      num_episodes=num_episodes)
  return phase_accounting.phase_stats(tally, time.perf_counter() - start)


class PythonLoop(driver.Loop):
  """One seed: a zoo.agent.quantile_agent steps Python environments."""

  def __init__(self, s: settings_lib.Settings, agent, replay,
               make_environment: Callable[[int, str],
                                          environment.BatchedEnvironment]):
    """Take a built agent, its replay and fn(iteration, phase) -> env."""
    self._settings = s
    self._agent = agent
    self._replay = replay
    self._make_environment = make_environment
    self._saved_until = 0
    self._streams = train_streams_lib.TrainStreams(
        lambda iteration: make_environment(iteration, 'train'))
    self.learners = [agent]

  def restore(self, paths: Sequence[str]) -> None:
    path, = paths
    agent, replay = self._agent, self._replay
    saved = checkpoint_read.load(path, agent.get_state())
    agent.set_state(saved.tree)
    replay.set_state(saved.meta['replay'])
    self._saved_until = max(
        replay.num_steps - replay.capacity // replay.num_streams, 0)
    for begin, arrays in saved.replay_chunks:
      replay.put_steps(begin, arrays)
      self._saved_until = begin + arrays['frames'].shape[1]
    if self._saved_until != replay.num_steps:
      raise ValueError(f'Checkpoint {path} holds replay steps up to '
                       f'{self._saved_until}, its counters say '
                       f'{replay.num_steps}.')
    self._streams.set_state(saved.meta[train_streams_lib.META_KEY])

  def train(self, iteration: int, on_step) -> List[driver.TrainResult]:
    agent = self._agent
    agent.reset_statistics()
    stats = self._streams.run_phase(
        iteration, agent.step, self._settings.num_train_frames,
        self._settings.num_action_repeats, on_step)
    return [driver.TrainResult(stats, agent.exploration_epsilon,
                               agent.statistics['state_value'])]

  def evaluate(self, iteration: int, on_step
               ) -> List[phase_accounting.PhaseStats]:
    """Evaluate on a fresh environment, whole episodes at K > 1.

    Or exactly `Settings.eval_episodes(iteration)` whole episodes, where > 0.
    """
    env = self._make_environment(iteration, 'eval')
    try:
      return [run_phase(
          env, self._agent.eval_step, self._settings.num_eval_frames,
          self._settings.num_action_repeats, on_step=on_step,
          whole_episodes=not phase_accounting.is_dqn_zoo(env.num_envs),
          num_episodes=self._settings.eval_episodes(iteration))]
    finally:
      env.close()

  def save(self, iteration: int, rows) -> None:
    """Checkpoint the run; only the replay steps added since the last save."""
    replay = self._replay
    end = replay.num_steps
    keep_from = max(end - replay.capacity // replay.num_streams, 0)
    meta = resume.checkpoint_meta(
        self._settings, iteration, rows[0], replay=replay.get_state(),
        **{train_streams_lib.META_KEY: self._streams.get_state()})
    checkpoint.save(self._settings.checkpoint_dir, iteration, meta,
                    self._agent.get_state(),
                    new_steps=replay.steps(max(self._saved_until, keep_from),
                                           end),
                    keep_steps_from=keep_from)
    self._saved_until = end

  def close(self) -> None:
    self._streams.close()


def checkpoint_transitions(s: settings_lib.Settings) -> int:
  """Return the most replay transitions the run's checkpoints hold at once.

  Steps are saved once, in chunks the checkpoints share: a full replay plus
  one iteration's new steps, or the whole run's if fewer.
  """
  steps_per_iteration = -(-s.num_train_frames // s.num_action_repeats)
  return min(s.replay_capacity + steps_per_iteration,
             s.num_iterations * steps_per_iteration)


def check(suite, s: settings_lib.Settings) -> None:
  """Every suite runs in the Python loop: nothing to refuse."""
  del suite, s


def make(suite, preset, runs: Sequence[settings_lib.Settings],
         make_environment: Optional[Callable] = None,
         network_fn: Optional[Callable] = None) -> driver.Loop:
  """Return the Python loop of one seed (the runner's groups are single).

  Args:
    suite: the seed's suite (its Python environment and network).
    preset: the agent variant (log lines).
    runs: the one seed's settings.
    make_environment: fn(iteration, phase) -> environment (tests); default:
      the suite's, seeded from (seed, iteration, phase).
    network_fn: the Haiku network fn (tests); default: the suite's.
  """
  s, = runs
  if make_environment is None:
    make_environment = build.make_environment_factory(suite, s)
  logging.info('%s (%s) on %s (%s); JAX device: %s', preset.name, s.agent,
               s.suite, s.environment_name, jax.devices()[0])
  probe = make_environment(0, 'eval')
  num_actions = probe.num_actions
  probe.close()
  logging.info('Settings: %s', s.checkpoint_config())
  agent, replay = build.build_agent(suite, s, num_actions, network_fn)
  logging.info('Replay: %d transitions in %d streams, %.2f GB when full.',
               replay.capacity, replay.num_streams, replay.nbytes / 1e9)
  return PythonLoop(s, agent, replay, make_environment)
