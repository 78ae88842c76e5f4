"""Tests for zoo.loops.train_streams: streams that go on across training phases.

A fake environment whose episodes outlast a stream's frames per phase shows
the difference from a fresh environment per phase; a short real Pong run
(vectorized, K = 8) shows whole games completing in training.
"""

import json
import logging
import math

import numpy as np
import pytest

from zoo.configuration import agent_registry
from zoo.loops import build
from zoo.environments import environment
from zoo.loops import runner
from zoo.replay import frame_replay as replay_lib
from zoo.storage import results_csv
from zoo.suites import atari_suite
from zoo.loops import python_loop
from zoo.configuration import settings as settings_lib
from zoo.loops import train_streams

F, M, L = environment.FIRST, environment.MID, environment.LAST


class _LongEpisodes(environment.BatchedEnvironment):
  """K streams whose episodes last `length` agent steps (FIRST to LAST).

  Stream k's episode e (counting from 0) lasts length + k + e steps; every
  step after FIRST earns reward 1, so a whole episode returns its length - 1
  steps. The observation's frames hold the episode step (mod 256) so that a
  replay can be checked against it. `log` collects ('reset', seed) and
  ('step', actions) calls.
  """

  num_actions = 3

  def __init__(self, num_envs, length, seed=0, log=None):
    self.num_envs = num_envs
    self.seed = seed
    self._length = length
    self._log = log if log is not None else []
    self._step = np.zeros(num_envs, np.int64)
    self._episode = np.zeros(num_envs, np.int64)
    self._last = np.zeros(num_envs, bool)
    self.closed = False

  def _episode_length(self):
    return self._length + np.arange(self.num_envs) + self._episode

  def _timestep(self, step_type, reward):
    frames = (self._step % 256).astype(np.uint8)
    obs = np.broadcast_to(frames[:, None, None, None],
                          (self.num_envs, 2, 2, 1)).copy()
    return environment.BatchedTimeStep(
        step_type.astype(np.int8), reward.astype(np.float32),
        np.where(step_type == L, 0.0, 1.0).astype(np.float32), obs)

  def reset(self):
    self._log.append(('reset', self.seed))
    self._step[:] = 0
    self._last[:] = False
    return self._timestep(np.full(self.num_envs, F), np.zeros(self.num_envs))

  def step(self, actions):
    actions = environment.check_actions(actions, self.num_envs,
                                        self.num_actions)
    self._log.append(('step', actions.copy()))
    first = self._last
    self._episode += first
    self._step = np.where(first, 0, self._step + 1)
    last = ~first & (self._step >= self._episode_length() - 1)
    step_type = np.where(first, F, np.where(last, L, M))
    self._last = last
    return self._timestep(step_type, np.where(first, 0.0, 1.0))

  def close(self):
    self.closed = True


class _Actor:
  """Acts round-robin and stores every step in a replay, as agent.step."""

  def __init__(self, replay):
    self.replay = replay
    self.calls = 0

  def __call__(self, timestep):
    k = timestep.step_type.shape[0]
    actions = (np.arange(k) + self.calls) % 3
    self.calls += 1
    self.replay.add(timestep.step_type, timestep.observation, actions,
                    timestep.reward, timestep.discount)
    return actions


def _replay(num_envs, steps_per_stream):
  return replay_lib.FrameReplay(num_envs * steps_per_stream, num_envs,
                                frame_shape=(2, 2), num_stacked_frames=1)


# 4 streams, 30 agent steps (120 frames) per stream per phase, episodes of
# 100+ steps: no episode fits in a phase.
K, REPEATS, STEPS_PER_PHASE, LENGTH, PHASES = 4, 4, 30, 100, 12
FRAMES = K * REPEATS * STEPS_PER_PHASE


def test_fresh_environment_per_phase_never_completes_an_episode():
  """What training did at K > 1 before: every phase cut its K episodes."""
  replay = _replay(K, PHASES * STEPS_PER_PHASE)
  actor = _Actor(replay)
  for iteration in range(1, PHASES + 1):
    stats = python_loop.run_phase(_LongEpisodes(K, LENGTH, iteration), actor,
                               FRAMES, REPEATS)
    assert stats.num_episodes == 0
    assert math.isnan(stats.episode_return)  # K > 1: no partial return.
  episode_steps = replay.steps(0, replay.num_steps)[0][1]['episode_steps']
  assert episode_steps.max() == STEPS_PER_PHASE - 1


def test_streams_go_on_and_complete_whole_episodes():
  replay = _replay(K, PHASES * STEPS_PER_PHASE)
  actor = _Actor(replay)
  made = []

  def make(iteration):
    made.append(_LongEpisodes(K, LENGTH, iteration))
    return made[-1]

  streams = train_streams.TrainStreams(make)
  results = [streams.run_phase(i, actor, FRAMES, REPEATS)
             for i in range(1, PHASES + 1)]
  assert [env.seed for env in made] == [1]  # Made once, never closed.
  assert not made[0].closed and streams.get_state()
  assert all(r.num_frames == FRAMES for r in results)
  # Episodes of stream k last 100 + k + e steps and return one less.
  ended = {}
  for k in range(K):
    t, e = 0, 0
    while t + LENGTH + k + e <= PHASES * STEPS_PER_PHASE:
      t += LENGTH + k + e
      ended.setdefault((t - 1) // STEPS_PER_PHASE, []).append(
          LENGTH + k + e - 1)
      e += 1
  for phase, result in enumerate(results):
    returns = ended.get(phase, [])
    assert result.num_episodes == len(returns)
    if returns:
      assert result.episode_return == np.mean(returns)
    else:  # Never a partial return at K > 1.
      assert math.isnan(result.episode_return)
  assert sum(r.num_episodes for r in results) == sum(
      len(v) for v in ended.values()) >= 3 * K
  # One unbroken sequence: one reset, then a step per act but the last.
  assert made[0]._log[0] == ('reset', 1)
  assert len(made[0]._log) == actor.calls == PHASES * STEPS_PER_PHASE
  # The replay holds steps from deep inside episodes, each stored with its
  # true episode step (the fake's frame holds it).
  steps = replay.steps(0, replay.num_steps)[0][1]
  np.testing.assert_array_equal(steps['episode_steps'],
                                steps['frames'][..., 0, 0])
  deep = steps['episode_steps'] >= STEPS_PER_PHASE
  assert deep.sum() >= K * 3 * (LENGTH - STEPS_PER_PHASE)
  assert steps['episode_steps'].max() >= LENGTH - 1


def test_one_stream_is_dqn_zoo_a_fresh_environment_per_phase():
  """K = 1: each phase equals python_loop.run_phase on a fresh environment."""
  logs = {'streams': [], 'run_phase': []}
  made = []

  def make(iteration):
    made.append(_LongEpisodes(1, 20, iteration, logs['streams']))
    return made[-1]

  streams = train_streams.TrainStreams(make)
  replays = [_replay(1, 400), _replay(1, 400)]
  actors = [_Actor(r) for r in replays]
  results = []
  for iteration, frames in [(1, 100), (2, 240), (3, 40)]:
    result = streams.run_phase(iteration, actors[0], frames, REPEATS)
    results.append(result[:3])
    expected = python_loop.run_phase(
        _LongEpisodes(1, 20, iteration, logs['run_phase']), actors[1],
        frames, REPEATS)
    assert (result.episode_return, result.num_episodes, result.num_frames) == (
        expected.episode_return, expected.num_episodes, expected.num_frames)
    assert made[-1].closed
    assert streams.get_state() is None
  assert [e.seed for e in made] == [1, 2, 3]
  assert len(logs['streams']) == len(logs['run_phase'])
  for a, b in zip(logs['streams'], logs['run_phase']):
    assert a[0] == b[0] and np.array_equal(a[1], b[1])
  for a, b in zip(replays[0].steps(0, replays[0].num_steps)[0][1].values(),
                  replays[1].steps(0, replays[1].num_steps)[0][1].values()):
    np.testing.assert_array_equal(a, b)
  # Episodes of 20 steps, then 21 (returns 19, 20): 25 steps end one, 60
  # end two and cut the third; 10 steps end none: the partial return.
  assert results == [(19.0, 1, 100), (19.5, 2, 240), (9.0, 0, 40)]


def test_state_is_json_and_resume_restarts_the_streams(caplog):
  made = []

  def make(iteration):
    made.append(_LongEpisodes(2, LENGTH, iteration))
    return made[-1]

  streams = train_streams.TrainStreams(make)
  assert streams.get_state() is None  # Nothing made yet.
  actor = _Actor(_replay(2, 200))
  streams.run_phase(1, actor, 2 * REPEATS * 30, REPEATS)
  streams.run_phase(2, actor, 2 * REPEATS * 30, REPEATS)
  state = json.loads(json.dumps(streams.get_state()))
  # Each stream acted on its 60th step (episode step 59, return 59).
  assert state == {'num_envs': 2, 'made_at_iteration': 1,
                   'episode_steps': [59, 59], 'episode_returns': [59.0, 59.0]}
  resumed = train_streams.TrainStreams(make)
  with caplog.at_level(logging.INFO, logger='absl'):
    resumed.set_state(state)
  assert 'the 2 episodes running at the checkpoint (at agent steps [59, 59]) ' \
      'are cut' in caplog.text
  resumed.run_phase(3, actor, 2 * REPEATS * 30, REPEATS)
  assert [e.seed for e in made] == [1, 3]  # Fresh streams of iteration 3.
  assert made[1]._log[0] == ('reset', 3)
  assert resumed.get_state()['episode_steps'] == [29, 29]
  # A checkpoint of a run with no streams running (None) resumes alike.
  older = train_streams.TrainStreams(make)
  older.set_state(None)
  older.run_phase(3, actor, 8, REPEATS)
  assert made[-1].seed == 3


def test_an_abandoned_phase_closes_the_streams():
  made = []

  def make(iteration):
    made.append(_LongEpisodes(2, LENGTH, iteration))
    return made[-1]

  def stop(frames):
    if frames >= 40:
      raise KeyError('stop')

  streams = train_streams.TrainStreams(make)
  actor = _Actor(_replay(2, 200))
  with pytest.raises(KeyError):
    streams.run_phase(1, actor, 80, REPEATS, on_step=stop)
  assert made[0].closed and streams.get_state() is None
  streams.run_phase(2, actor, 80, REPEATS)
  assert [e.seed for e in made] == [1, 2]
  with pytest.raises(ValueError, match='positive frame budget'):
    streams.run_phase(3, actor, 0, REPEATS)


class _Recording(environment.BatchedEnvironment):
  """Passes an environment through; records each stream's whole episodes."""

  def __init__(self, env):
    self._env = env
    self.num_envs, self.num_actions = env.num_envs, env.num_actions
    self.stack_padding = getattr(env, 'stack_padding', 'trailing')
    self.episodes = []  # (step index of LAST, return, length).
    self._running = np.zeros(env.num_envs)
    self._length = np.zeros(env.num_envs, np.int64)
    self.num_steps = 0

  def _record(self, timestep):
    first = timestep.step_type == F
    self._running = np.where(first, 0.0, self._running + timestep.reward)
    self._length = np.where(first, 0, self._length + 1)
    for k in np.flatnonzero(timestep.step_type == L):
      self.episodes.append((self.num_steps, float(self._running[k]),
                            int(self._length[k])))
    self.num_steps += 1
    return timestep

  def reset(self):
    return self._record(self._env.reset())

  def step(self, actions):
    return self._record(self._env.step(actions))

  def close(self):
    self._env.close()


@pytest.mark.end_to_end
def test_a_short_pong_run_completes_whole_training_games(tmp_path):
  # 8 streams, 1,000 frames (250 steps) each per training phase: a Pong game
  # lasts about 760 to 1,200 steps, so games end only if streams go on. Four
  # phases, 1,000 steps per stream: this seed's eight games end at 758-883
  # steps, in the fourth (the first three show phases where none ends).
  path = str(tmp_path / 'run.csv')
  num_iterations, num_train_frames = 4, 8000
  preset = agent_registry.default_preset('cr_dqn')
  s = dict(settings_lib.default_settings(atari_suite.ATARI),
           environment_name='pong', num_envs=8, environment_mode='vector',
           num_iterations=num_iterations, num_train_frames=num_train_frames,
           num_eval_frames=200, num_quantiles=11, hidden_size=16,
           replay_capacity=4000, min_replay_capacity_fraction=0.5,
           batch_size=8, learn_period=400, target_network_update_period=1600,
           results_csv_path=path, checkpoint_dir='', seed=2)
  train_factory = build.make_environment_factory(
      atari_suite.ATARI, settings_lib.resolve_settings(atari_suite.ATARI, preset,
                                                     s))
  # Evaluation is not under test: one reference stream keeps it short.
  eval_factory = build.make_environment_factory(
      atari_suite.ATARI, settings_lib.resolve_settings(
          atari_suite.ATARI, preset,
          dict(s, num_envs=1, environment_mode='reference')))
  made = []

  def make(iteration, phase):
    if phase == 'eval':
      return eval_factory(iteration, phase)
    made.append(_Recording(train_factory(iteration, phase)))
    return made[-1]

  runner.run(atari_suite.ATARI, preset, s, make_environment=make)
  rows = results_csv.read_rows(path)
  assert len(made) == 1  # One training environment for the whole run.
  steps_per_phase = num_train_frames // (8 * 4)
  episodes = made[0].episodes
  assert episodes and all(length > steps_per_phase
                          for _, _, length in episodes)
  for _, episode_return, _ in episodes:
    assert episode_return == int(episode_return)
    assert -21 <= episode_return <= 21
  assert sum(int(float(r['train_num_episodes'])) for r in rows[1:]) == len(
      episodes) > 0
  for iteration, row in enumerate(rows[1:], 1):
    ended = [ret for t, ret, _ in episodes
             if (iteration - 1) * steps_per_phase <= t < iteration *
             steps_per_phase]
    assert int(float(row['train_num_episodes'])) == len(ended)
    if ended:
      assert float(row['train_episode_return']) == pytest.approx(
          np.mean(ended))
    else:
      assert math.isnan(float(row['train_episode_return']))
