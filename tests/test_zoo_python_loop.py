"""Tests for zoo.loops.python_loop: phase statistics, seeding, resume equivalence."""

import math
import os
import shutil

import jax
import numpy as np
import pytest

from tests import catch
from tests import test_zoo_agent
from zoo.configuration import settings as settings_lib
from zoo.environments import environment
from zoo.loops import build
from zoo.loops import driver
from zoo.loops import phase_accounting
from zoo.loops import python_loop
from zoo.loops import run_hooks
from zoo.storage import checkpoint


class _ScriptedEnv(environment.BatchedEnvironment):
  """Replays a fixed list of (step_type, reward) per stream."""

  num_actions = 2

  def __init__(self, script):
    self._script = np.asarray(script)  # [T, K, 2]
    self.num_envs = self._script.shape[1]
    self._t = 0

  def _timestep(self):
    step = self._script[self._t]
    k = self.num_envs
    return environment.BatchedTimeStep(
        step[:, 0].astype(np.int8), step[:, 1].astype(np.float32),
        np.ones(k, np.float32), np.zeros((k, 2, 2, 1), np.uint8))

  def reset(self):
    self._t = 0
    return self._timestep()

  def step(self, actions):
    self._t += 1
    return self._timestep()


F, M, L = 0, 1, 2


def _act(timestep):
  return np.zeros(timestep.step_type.shape[0], np.int32)


def test_phase_return_is_mean_of_complete_episodes_of_raw_rewards():
  script = [[(F, 0)], [(M, 5)], [(L, -3)], [(F, 0)], [(M, 7)], [(L, 1)],
            [(F, 0)], [(M, 100)]]
  stats = python_loop.run_phase(_ScriptedEnv(script), _act, num_frames=32,
                             num_action_repeats=4)
  assert stats.num_episodes == 2 and stats.num_frames == 32
  assert stats.episode_return == (2 + 8) / 2  # Unclipped; partial ignored.


def test_phase_return_when_no_episode_completes():
  script = [[(F, 0), (F, 0)], [(M, 5), (M, 1)], [(M, 2), (M, 1)]]
  stats = python_loop.run_phase(_ScriptedEnv(script), _act, num_frames=24,
                             num_action_repeats=4)
  assert stats.num_episodes == 0 and stats.num_frames == 24
  assert math.isnan(stats.episode_return)  # K > 1: never a partial return.
  one = python_loop.run_phase(_ScriptedEnv([s[:1] for s in script]), _act,
                           num_frames=12, num_action_repeats=4)
  assert (one.num_episodes, one.episode_return) == (0, 7.0)  # DQN Zoo's.


class _EpisodeEnv(environment.BatchedEnvironment):
  """K streams of independent episodes of random length, numpy-vectorised.

  Each episode draws a kind (probabilities `weights`), then a length in
  timesteps (FIRST to LAST, so >= 2) uniform in that kind's [low, high]; episodes
  longer than `cap` timesteps end at the cap (as Atari's frame cap). Every
  step after FIRST pays reward 1, so an episode's return is its length - 1:
  short episodes pay little, long ones much. Records the episodes each
  stream completed.
  """

  num_actions = 2

  def __init__(self, num_envs, kinds, weights, seed, cap=None):
    self.num_envs = num_envs
    self._kinds = np.asarray(kinds)  # [kinds, 2]: low, high lengths.
    self._weights = np.asarray(weights, float)
    self._cap = cap
    self._rng = np.random.default_rng(seed)
    self._observation = np.zeros((num_envs, 1, 1, 1), np.uint8)
    self.completed = np.zeros(num_envs, int)

  def _draw(self, mask):
    kind = np.searchsorted(np.cumsum(self._weights),
                           self._rng.random(self.num_envs), side='right')
    low, high = self._kinds[np.minimum(kind, len(self._weights) - 1)].T
    length = self._rng.integers(low, high + 1)
    if self._cap is not None:
      length = np.minimum(length, self._cap)
    self._length = np.where(mask, length, self._length)
    self._t = np.where(mask, 0, self._t)

  def _timestep(self, first):
    last = ~first & (self._t == self._length - 1)
    step_type = np.where(first, environment.FIRST,
                         np.where(last, environment.LAST, environment.MID))
    self.completed += last
    self._last = last
    return environment.BatchedTimeStep(
        step_type.astype(np.int8), (~first).astype(np.float32),
        np.ones(self.num_envs, np.float32), self._observation)

  def reset(self):
    self._length = np.zeros(self.num_envs, int)
    self._t = np.zeros(self.num_envs, int)
    self._draw(np.ones(self.num_envs, bool))
    return self._timestep(np.ones(self.num_envs, bool))

  def step(self, actions):
    first = self._last
    self._t += 1
    self._draw(first)
    return self._timestep(first)

  @staticmethod
  def mean_return(kinds, weights):
    """Return the true mean episode return (mean length - 1), uncapped."""
    return float(np.dot(weights, np.mean(kinds, axis=1)) - 1)


# Half short cheap episodes, half long rich ones: true mean return 102.
_SHORT_AND_LONG = ([[3, 8], [150, 250]], [0.5, 0.5])


def _phase(num_envs, num_frames, seed, whole_episodes, kinds=_SHORT_AND_LONG,
           cap=None, repeats=4):
  env = _EpisodeEnv(num_envs, *kinds, seed=seed, cap=cap)
  stats = python_loop.run_phase(env, _act, num_frames, repeats,
                             whole_episodes=whole_episodes)
  return stats, env


def test_whole_episodes_at_k64_estimate_the_mean_return_the_budget_rule_not():
  # 300 steps per stream: an episode that starts before the budget is spent
  # ends (at most 250 steps) before the bound (one budget past it) cuts it,
  # so the bounded rule is the whole-episode rule here.
  num_envs, num_frames = 64, 64 * 300 * 4
  true_mean = _EpisodeEnv.mean_return(*_SHORT_AND_LONG)
  whole = [_phase(num_envs, num_frames, seed, True)[0]
           for seed in range(60)]
  assert not any(s.num_cut for s in whole)
  returns = [s.episode_return for s in whole]
  mean, se = np.mean(returns), np.std(returns, ddof=1) / np.sqrt(len(whole))
  # A 4-SE band of about 2% of the mean (a ratio estimator: slightly biased).
  assert se < 0.01 * true_mean, se
  assert abs(mean - true_mean) < 4 * se, (mean, true_mean, se)
  # The budget rule keeps only the short episodes that complete in time.
  budget = [_phase(num_envs, 64 * 100 * 4, seed, False)[0].episode_return
            for seed in range(10)]
  assert np.mean(budget) < 0.1 * true_mean, np.mean(budget)


def test_a_phase_needs_a_positive_budget():
  with pytest.raises(ValueError, match='positive frame budget, got 0'):
    _phase(2, 0, 0, True)


@pytest.mark.parametrize('num_envs,num_frames,kinds,cap', [
    (64, 64 * 100 * 4, _SHORT_AND_LONG, None),
    (8, 1, _SHORT_AND_LONG, None),  # Budget below one step of the K streams.
    (16, 16 * 4, ([[2, 3], [5000, 5000]], [0.95, 0.05]), None),  # Very long.
    (4, 4 * 50 * 4, ([[10**6, 10**6]], [1.0]), 300),  # The cap ends them.
    (2, 400, ([[2, 2], [3, 3]], [0.5, 0.5]), None),  # LAST right after FIRST.
])
def test_k_stream_evaluation_counts_whole_episodes_within_the_bound(
    num_envs, num_frames, kinds, cap):
  for seed in range(3):
    stats, env = _phase(num_envs, num_frames, seed, True, kinds, cap)
    # Every stream's first episode counts: ended, or cut at the bound.
    assert stats.num_episodes >= num_envs
    # Returns are length - 1 (a cut episode's: its steps so far - 1), so the
    # frames counted are those of the counted episodes.
    assert stats.num_frames == 4 * round(
        stats.num_episodes * (stats.episode_return + 1))
    assert stats.num_frames >= num_frames
    # The bound: at most one budget stepped past it, plus one step (a budget
    # below one step of the K streams is spent by the first step).
    bound = phase_accounting.bound(num_frames)
    step = 4 * num_envs
    assert stats.num_frames <= max(num_frames + bound, step) + step
    if not stats.num_cut:  # Then every stream finished its episode.
      assert np.all(env.completed >= 1)
    assert stats.frame_rate == stats.num_frames / stats.duration


def test_environment_seeds_differ_by_iteration_and_phase():
  seeds = {build.environment_seed(1, i, p)
           for i in range(5) for p in build.PHASES}
  assert len(seeds) == 10
  assert build.environment_seed(1, 3, 'eval') == build.environment_seed(
      1, 3, 'eval')


class _Stop(Exception):
  pass


# K = 1 with 150 steps per iteration, as K = 2 with 300 frames.
_ONE_STREAM = dict(num_envs=1, num_train_frames=150)


class _CountingCatch(catch.CatchBatchedEnvironment):
  """Catch that counts its resets and the timesteps it returned."""

  def __init__(self, *args):
    super().__init__(*args)
    self.num_resets = self.num_timesteps = 0

  def reset(self):
    self.num_resets += 1
    self.num_timesteps += 1
    return super().reset()

  def step(self, actions):
    self.num_timesteps += 1
    return super().step(actions)


class _Stop(Exception):
  pass


class _StopAfter(run_hooks.RunHooks):
  """Stop the run once `iteration` is checkpointed (as an interrupt would)."""

  def __init__(self, iteration):
    self._iteration = iteration

  def end_iteration(self, iteration, row):
    if iteration == self._iteration:
      raise _Stop()


def _catch_run(stop_after, checkpoint_dir, hooks=(), made=None, **overrides):
  """Run the iterations on Catch, or stop after iteration `stop_after`.

  `made`: a list that collects the environments made, (iteration, phase,
  env).
  """
  # 120 slots per stream, 150 steps per stream and iteration: the replay
  # wraps, so checkpoints drop and add chunks.
  values = dict(num_iterations=3, num_train_frames=300, num_eval_frames=50,
                num_envs=2, seed=5, checkpoint_dir=checkpoint_dir)
  values.update(overrides)
  values.setdefault('replay_capacity', 120 * values['num_envs'])
  s = test_zoo_agent._settings('cr_dqn', **values)

  def make(it, phase):
    env = _CountingCatch(s.num_envs, build.environment_seed(5, it, phase))
    if made is not None:
      made.append((it, phase, env))
    return env

  agent, replay = test_zoo_agent._catch_agent(s)
  try:
    rows, = driver.run(
        [s], lambda: python_loop.PythonLoop(s, agent, replay, make),
        environment_name='catch', normalize=lambda x: x / 2,
        extra_hooks=[list(hooks) + ([_StopAfter(stop_after)]
                                    if stop_after < s.num_iterations else [])])
  except _Stop:
    rows = None
  return rows, agent


def _deterministic(rows):
  return [{k: v for k, v in row.items() if 'frame_rate' not in k}
          for row in rows]


def _assert_rows_equal(a, b):
  a, b = _deterministic(a), _deterministic(b)
  assert len(a) == len(b)
  for x, y in zip(a, b):
    assert x.keys() == y.keys()
    for key in x:
      assert x[key] == y[key] or (isinstance(x[key], float) and
                                  math.isnan(x[key]) and math.isnan(y[key]))


def _assert_states_equal(a, b):
  for x, y in zip(jax.tree.leaves(a.get_state()),
                  jax.tree.leaves(b.get_state())):
    np.testing.assert_array_equal(x, y)


def test_resumed_run_equals_uninterrupted_run_with_one_stream(tmp_path):
  """K = 1 (DQN Zoo: a fresh environment per phase): resume is exact."""
  full_rows, full_agent = _catch_run(3, str(tmp_path / 'full'), **_ONE_STREAM)
  # Stop after iteration 1, then resume with fresh objects (as a restart).
  _catch_run(1, str(tmp_path / 'resumed'), **_ONE_STREAM)
  latest = checkpoint.latest(str(tmp_path / 'resumed'))
  assert latest.endswith('000001')
  # Nothing runs between phases at K = 1.
  assert checkpoint.load_meta(latest)['train_streams'] is None
  rows, agent = _catch_run(3, str(tmp_path / 'resumed'), **_ONE_STREAM)
  assert len(rows) == 4 and agent.num_updates > 100  # It learned.
  _assert_rows_equal(full_rows, rows)
  _assert_states_equal(full_agent, agent)
  # Each checkpoint wrote the new steps the replay still held (the last 120
  # of the iteration's 150) once; older chunks went when overwritten and
  # unused by the previous checkpoint, which is kept.
  assert sorted(os.listdir(tmp_path / 'resumed' / 'replay')) == [
      'steps_000000000180_000000000300', 'steps_000000000330_000000000450']
  assert sorted(os.listdir(tmp_path / 'resumed')) == [
      'iteration_000002', 'iteration_000003', 'replay']


def test_resume_with_streams_restarts_them_and_is_otherwise_exact(tmp_path):
  """K > 1: the resumed run's streams are fresh ones of the next iteration.

  302 frames per training phase: 151 steps per stream, so that iteration 2
  starts inside a Catch episode (5 steps) when the streams go on.
  """
  full_made, made, again_made = [], [], []
  two = dict(num_iterations=2, num_train_frames=302)
  full_rows, _ = _catch_run(2, str(tmp_path / 'full'), made=full_made, **two)
  _catch_run(1, str(tmp_path / 'resumed'), made=made, **two)
  latest = checkpoint.latest(str(tmp_path / 'resumed'))
  # The checkpoint records the episodes running: each stream acted on its
  # 151st step, step 0 of its 31st episode.
  assert checkpoint.load_meta(latest)['train_streams'] == {
      'num_envs': 2, 'made_at_iteration': 1, 'episode_steps': [0, 0],
      'episode_returns': [0.0, 0.0]}
  shutil.copytree(tmp_path / 'resumed', tmp_path / 'again')
  rows, agent = _catch_run(2, str(tmp_path / 'resumed'), made=made, **two)
  # Uninterrupted: one training environment, made at iteration 1. Resumed:
  # a fresh one of iteration 2 (its episodes start at FIRST).
  train = lambda envs: [it for it, phase, _ in envs if phase == 'train']
  assert train(full_made) == [1] and train(made) == [1, 2]
  # What came before the checkpoint is the uninterrupted run's.
  _assert_rows_equal(full_rows[:2], rows[:2])
  # The resumed run is a deterministic function of its checkpoint.
  again_rows, again_agent = _catch_run(2, str(tmp_path / 'again'),
                                       made=again_made, **two)
  assert train(again_made) == [2]
  _assert_rows_equal(rows, again_rows)
  _assert_states_equal(agent, again_agent)
  # Every training timestep came from one unbroken environment (151 per
  # stream and iteration) when the streams go on; after the resume, from the
  # fresh one, which started with a reset (all FIRST).
  counts = lambda envs: [(env.num_resets, env.num_timesteps)
                         for _, phase, env in envs if phase == 'train']
  assert counts(full_made) == [(1, 2 * 151)]
  assert counts(made) == [(1, 151), (1, 151)]


def test_checkpoint_of_another_configuration_is_refused(tmp_path):
  _catch_run(0, str(tmp_path))
  with pytest.raises(settings_lib.ConfigError,
                     match='--num_quantiles=11 in the checkpoint, 13 now'):
    _catch_run(1, str(tmp_path), num_quantiles=13)


class _Recorder(run_hooks.RunHooks):
  """Records the hook calls; raises in on_step at a given call."""

  def __init__(self, raise_at_step=None):
    self.calls = []
    self._steps = 0
    self._raise_at_step = raise_at_step

  def begin_run(self, start_iteration, agent, rows):
    self.calls.append(('begin_run', start_iteration))

  def begin_iteration(self, iteration):
    self.calls.append(('begin_iteration', iteration))

  def begin_phase(self, iteration, phase):
    self.calls.append(('begin_phase', iteration, phase))

  def on_step(self, frames, status=''):
    self._steps += 1
    if self._steps == self._raise_at_step:
      raise KeyError('stop')

  def end_phase(self, iteration, phase, stats):
    self.calls.append(('end_phase', iteration, phase, stats.num_frames))

  def end_iteration(self, iteration, row):
    self.calls.append(('end_iteration', iteration, row['iteration']))

  def end_run(self):
    self.calls.append(('end_run',))


def test_hooks_see_every_phase_in_order_and_may_stop_the_run(tmp_path):
  # 25 steps per eval phase, 150 per train phase (2 streams): step 210 is
  # in iteration 2's training.
  recorder = _Recorder(raise_at_step=210)
  with pytest.raises(KeyError):
    _catch_run(3, str(tmp_path), hooks=[recorder])
  assert recorder.calls == [
      ('begin_run', 0), ('begin_iteration', 0), ('begin_phase', 0, 'eval'),
      ('end_phase', 0, 'eval', 50), ('end_iteration', 0, 0),
      ('begin_iteration', 1), ('begin_phase', 1, 'train'),
      ('end_phase', 1, 'train', 300), ('begin_phase', 1, 'eval'),
      ('end_phase', 1, 'eval', 50), ('end_iteration', 1, 1),
      ('begin_iteration', 2), ('begin_phase', 2, 'train'), ('end_run',)]
  # The abandoned iteration left nothing: iteration 1's checkpoint is the
  # latest.
  assert checkpoint.latest(str(tmp_path)).endswith('iteration_000001')


@pytest.mark.parametrize('num_envs,num_episodes', [(1, 5), (4, 10), (3, 2)])
def test_an_evaluation_of_n_episodes_ends_after_exactly_n_whole_episodes(
    num_envs, num_episodes):
  # Episodes of 2 to 40 timesteps, the budget (one frame) ignored; the
  # cap (12 timesteps) ends the long ones, as --max_frames_per_episode.
  kinds = ([[2, 5], [30, 40]], [0.5, 0.5])
  env = _EpisodeEnv(num_envs, *kinds, seed=num_envs, cap=12)
  stats = python_loop.run_phase(env, _act, 1, 4, num_episodes=num_episodes,
                                whole_episodes=num_envs > 1)
  assert stats.num_episodes == num_episodes and stats.num_cut == 0
  assert stats.num_frames == 4 * round(
      num_episodes * (stats.episode_return + 1))
  # The streams completed those episodes and at most K - 1 more that did
  # not count (begun after the N-th had started): the phase waits for none.
  assert num_episodes <= env.completed.sum() < num_episodes + num_envs
