"""Tests for zoo.loops.phase_accounting: one count for both loops.

Scripted timesteps go through the host path (numpy, `run_steps`, as
zoo.loops.python_loop and zoo.loops.train_streams) and the device path (jax.numpy inside
jit, as zoo.loops.jitted_train); both give the same CSV numbers under each rule.
Stuck streams (episodes that never end) show whole episodes ending within
their bound.
"""

import functools
import math

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from zoo.environments import environment
from zoo.loops import phase_accounting

F, M, L = environment.FIRST, environment.MID, environment.LAST
REPEATS = 4


def _host(script, running, num_frames, whole_episodes):
  """Run the script through run_steps; return (timesteps used, tally)."""
  step_types, rewards = (np.asarray(a) for a in zip(*script))
  used = []

  def timestep(t):
    used.append(t)
    return environment.BatchedTimeStep(
        step_types[t].astype(np.int8), rewards[t].astype(np.float32),
        np.ones(step_types.shape[1], np.float32), None)

  actions, tally = phase_accounting.run_steps(
      timestep(0), lambda actions: timestep(len(used)),
      lambda ts: np.zeros(ts.step_type.shape, np.int32),
      phase_accounting.start(np.asarray(running, np.float64)), num_frames,
      REPEATS, whole_episodes)
  assert actions.shape == (step_types.shape[1],)
  return len(used), tally


@functools.partial(jax.jit, static_argnums=(2, 3, 5))
def _device(step_types, rewards, num_frames, whole_episodes, running,
            cut_rule=phase_accounting.CUT_RULE):
  """The same on device: count and is_over in a while_loop."""

  def body(carry):
    t, tally, _ = carry
    tally = phase_accounting.count(tally, step_types[t], rewards[t],
                                   num_frames, REPEATS, xp=jnp,
                                   cut_rule=cut_rule)
    return t + 1, tally, phase_accounting.is_over(tally, num_frames,
                                                  whole_episodes, xp=jnp)

  tally = phase_accounting.start(running, xp=jnp)
  t, tally, _ = jax.lax.while_loop(lambda c: ~c[2], body,
                                   (0, tally, jnp.bool_(False)))
  return t, tally


def _both(script, running, num_frames, whole_episodes=False):
  """Return the PhaseStats (timings aside) of both paths, checked equal."""
  used, tally = _host(script, running, num_frames, whole_episodes)
  step_types, rewards = (np.asarray(a) for a in zip(*script))
  t, on_device = _device(jnp.asarray(step_types, jnp.int8),
                         jnp.asarray(rewards, jnp.float32), num_frames,
                         whole_episodes, jnp.asarray(running, jnp.float32))
  assert int(t) == used
  host = phase_accounting.phase_stats(tally, 1.0)
  device = phase_accounting.phase_stats(jax.device_get(on_device), 1.0)
  np.testing.assert_equal(host[:3], device[:3])
  np.testing.assert_allclose(tally.running, on_device.running)
  assert host.frame_rate == host.num_frames
  return host, tally.running


def _steps(*columns):
  """Return the rows ([K] step types, [K] rewards) of per-stream columns."""
  return [tuple(zip(*row)) for row in zip(*columns)]


def test_one_stream_budget_cuts_and_reports_the_partial_return():
  # Episodes F, M(5), L(-3) then F, M(7), M(1): 6 steps of the budget.
  stream = [(F, 0), (M, 5), (L, -3), (F, 0), (M, 7), (M, 1), (L, 9)]
  stats, running = _both(_steps(stream), [0.0], 6 * REPEATS)
  assert stats[:3] == (2.0, 1, 24)  # Unclipped return of the ended one.
  assert running.tolist() == [8.0]
  cut, _ = _both(_steps(stream[3:]), [0.0], 2 * REPEATS)
  assert cut[:3] == (7.0, 0, 8)  # None ended: DQN Zoo's partial return.


def test_training_streams_carry_their_returns_across_phases():
  # K = 2 streams carried from the previous phase with returns 10 and 1.
  a = [(M, 1), (L, 2), (F, 0), (M, 4)]
  b = [(M, 1), (M, 1), (M, 1), (M, 1)]
  stats, running = _both(_steps(a, b), [10.0, 1.0], 4 * 2 * REPEATS)
  # Stream a's episode ended here: its whole return counts.
  assert stats[:3] == (13.0, 1, 32)
  assert running.tolist() == [4.0, 5.0]
  # The next phase, no episode ends: NaN, never a partial return at K > 1.
  none, running = _both(_steps(b[:2], b[:2]), running, 2 * 2 * REPEATS)
  assert math.isnan(none.episode_return) and none[1:3] == (0, 16)
  assert running.tolist() == [6.0, 7.0]


def test_whole_episodes_count_the_episodes_started_within_the_budget():
  # K = 2, budget 3 steps of both streams: stream a's second episode
  # starts within it (counted), stream b's second one after (not counted,
  # its frames not either); the phase waits for a's to end.
  a = [(F, 0), (L, 1), (F, 0), (M, 2), (M, 2), (L, 2)]
  b = [(F, 0), (M, 5), (L, 5), (F, 0), (M, 9), (M, 9)]
  stats, _ = _both(_steps(a, b), [0.0, 0.0], 6 * REPEATS, whole_episodes=True)
  assert stats[:3] == ((1 + 10 + 6) / 3, 3, (6 + 3) * REPEATS)
  # The budget rule stops at the budget: the episodes that ended by then.
  budget, _ = _both(_steps(a, b), [0.0, 0.0], 6 * REPEATS)
  assert budget[:3] == ((1 + 10) / 2, 2, 24)


@pytest.mark.parametrize('num_streams', [1, 3])
def test_random_scripts_agree_on_host_and_device(num_streams):
  rng = np.random.default_rng(num_streams)
  for whole_episodes in (False, True):
    length = 200
    step_types = rng.choice([M, L], size=(length, num_streams), p=[0.8, 0.2])
    step_types[0] = F
    for t in range(1, length):  # Auto-reset after LAST.
      step_types[t, step_types[t - 1] == L] = F
    step_types[-1, step_types[-1] == M] = L  # Whole episodes end.
    rewards = np.where(step_types == F, 0,
                       rng.integers(-3, 4, step_types.shape))
    script = list(zip(step_types, rewards))
    _both(script, [0.0] * num_streams, 40 * num_streams * REPEATS,
          whole_episodes)


def test_whole_episodes_end_at_the_bound_with_the_stuck_episode_partial():
  # K = 2, budget 4 steps of both streams (32 frames), bound 32 frames past
  # it: stream b's episode never ends, so the phase ends when the streams
  # have stepped 64 frames (8 timesteps), b's episode cut with its return.
  a = [(F, 0), (L, 1)] * 20
  b = [(F, 0)] + [(M, 1)] * 39
  assert phase_accounting.bound(32) == 32
  stats, running = _both(_steps(a, b), [0.0, 0.0], 32, whole_episodes=True)
  # a: 2 episodes before the budget was spent (return 1 each); b: 7 so far.
  assert stats[:3] == ((1 + 1 + 7) / 3, 3, 4 * 8 + 4 * 4)
  assert stats.num_cut == 1 and running.tolist() == [1.0, 7.0]


@pytest.mark.parametrize('on_device', [False, True])
def test_the_drop_rule_leaves_the_cut_episode_out(on_device):
  a = [(F, 0), (L, 1)] * 20
  b = [(F, 0)] + [(M, 1)] * 39
  step_types, rewards = (np.asarray(x) for x in zip(*_steps(a, b)))
  if on_device:
    _, tally = jax.device_get(_device(
        jnp.asarray(step_types, jnp.int8), jnp.asarray(rewards, jnp.float32),
        32, True, jnp.zeros(2, jnp.float32), 'drop'))
  else:
    tally = phase_accounting.start(np.zeros(2))
    for step_type, reward in zip(step_types, rewards):
      tally = phase_accounting.count(tally, step_type, reward, 32, REPEATS,
                                     cut_rule='drop')
      if phase_accounting.is_over(tally, 32, True):
        break
  stats = phase_accounting.phase_stats(tally, 1.0)
  assert stats[:3] == (1.0, 2, 48) and stats.num_cut == 0
  assert int(tally.stepped) == 64 and not np.any(tally.counted)


def test_the_budget_rule_never_cuts_past_its_budget():
  # Training phases (and evaluation at K = 1) end on the step that spends
  # the budget, even when the bound is smaller than one step of K streams.
  # Here a 4-frame budget, bound 4, one step of 3 streams 12 frames.
  stream = [(F, 0)] + [(M, 2)] * 9
  stats, running = _both(_steps(stream, stream, stream), [0.0] * 3, 4)
  assert math.isnan(stats.episode_return) and stats[1:3] == (0, 12)
  assert stats.num_cut == 0 and running.tolist() == [0.0] * 3


class _StuckEnvironment(environment.BatchedEnvironment):
  """K streams whose first episode never ends; stream i earns i per step."""

  def __init__(self, num_envs):
    self.num_envs, self.num_actions = num_envs, 2
    self.steps = 0

  def _timestep(self, step_type):
    k = self.num_envs
    reward = np.zeros(k, np.float32) if step_type == F else np.arange(
        k, dtype=np.float32)
    return environment.BatchedTimeStep(np.full(k, step_type, np.int8), reward,
                                       np.ones(k, np.float32), None)

  def reset(self):
    return self._timestep(F)

  def step(self, actions):
    self.steps += 1
    return self._timestep(M)


@functools.partial(jax.jit, static_argnums=(0, 1))
def _stuck_on_device(num_envs, num_frames):
  """The stuck streams in a jitted while_loop (the jitted loop's shape)."""

  def body(carry):
    t, tally, _ = carry
    step_type = jnp.where(t == 0, F, M).astype(jnp.int8)
    reward = jnp.where(t == 0, 0.0, jnp.arange(num_envs, dtype=jnp.float32))
    tally = phase_accounting.count(
        tally, jnp.full(num_envs, step_type), reward, num_frames, REPEATS,
        xp=jnp)
    return t + 1, tally, phase_accounting.is_over(tally, num_frames, True,
                                                  xp=jnp)

  tally = phase_accounting.start(jnp.zeros(num_envs, jnp.float32), xp=jnp)
  return jax.lax.while_loop(lambda c: ~c[2], body,
                            (0, tally, jnp.bool_(False)))[:2]


def test_stuck_streams_end_within_the_bound_on_host_and_device():
  # The untrained Breakout case at small scale: K = 16, a 4,000-frame
  # budget, no episode ever ends. The phase stops once the streams have
  # stepped the budget again past it; every episode counts, cut.
  k, budget = 16, 4000
  env = _StuckEnvironment(k)
  seen = []
  _, tally = phase_accounting.run_steps(
      env.reset(), env.step, lambda ts: np.zeros(k, np.int32),
      phase_accounting.start(np.zeros(k)), budget, REPEATS, True,
      on_tally=lambda t: seen.append(phase_accounting.past_budget(t, budget)))
  limit = budget + phase_accounting.bound(budget)
  step_frames = k * REPEATS
  assert limit <= int(tally.stepped) < limit + step_frames
  steps = int(tally.stepped) // step_frames
  assert env.steps + 1 == steps == 125
  stats = phase_accounting.phase_stats(tally, 2.0)
  # Every stream's only episode was counted throughout, with its return.
  assert stats.num_frames == int(tally.stepped) == 8000
  assert (stats.num_episodes, stats.num_cut) == (k, k)
  assert stats.episode_return == pytest.approx(np.mean(np.arange(k)) *
                                               (steps - 1))
  assert seen[0] == '' and seen[-2] == (
      '4000-frame budget spent, finishing 16 episodes in progress, 3936 '
      'frames past it (at most 4000)')
  t, on_device = jax.device_get(_stuck_on_device(k, budget))
  assert int(t) == steps
  assert phase_accounting.phase_stats(on_device, 2.0)[:3] == stats[:3]
  assert int(on_device.num_cut) == k and int(on_device.stepped) == 8000


def test_past_budget_says_nothing_before_the_budget_and_counts_after():
  tally = phase_accounting.start(np.zeros(3))._replace(
      frames=np.int64(10), stepped=np.int64(10))
  assert phase_accounting.past_budget(tally, 500_000) == ''
  tally = tally._replace(counted=np.array([True, False, False]),
                         frames=np.int64(600_000), stepped=np.int64(1_840_000))
  assert phase_accounting.past_budget(tally, 500_000) == (
      '500k-frame budget spent, finishing 1 episode in progress, 1.3M frames '
      'past it (at most 500k)')
  assert phase_accounting.past_budget(tally, 500_000, math.inf).endswith(
      '1.3M frames past it')


def test_a_count_of_episodes_starts_the_first_n_and_waits_for_them():
  # K = 3 streams all start (FIRST); N = 2: streams 0 and 1 count, in order.
  tally = phase_accounting.start(np.zeros(3))
  first = np.zeros(3, np.int8)
  reward = np.ones(3)
  count = lambda t, step: phase_accounting.count(t, step, reward, 1, 4,
                                                 num_episodes=2)
  tally = count(tally, first)
  np.testing.assert_array_equal(tally.counted, [True, True, False])
  assert int(tally.frames) == 8  # The budget (1 frame) plays no part.
  tally = count(tally, np.array([2, 1, 1], np.int8))  # Stream 0 ends.
  assert int(tally.num_episodes) == 1
  assert not phase_accounting.is_over(tally, 1, True, num_episodes=2)
  tally = count(tally, np.array([0, 2, 2], np.int8))  # Stream 0 restarts.
  assert not tally.counted[0]  # Two have started: it does not count.
  assert phase_accounting.is_over(tally, 1, True, num_episodes=2)
  assert (int(tally.num_episodes), float(tally.return_sum)) == (2, 3.0)
