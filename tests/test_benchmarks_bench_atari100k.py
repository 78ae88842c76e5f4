"""Tests for scripts.benchmarks.bench_atari100k: its settings, estimate, tables
and its rounds with fake loops (the benchmark itself prints measured
numbers and is not a test; a real run trains 8,000 frames before its first
round, a minute on a CPU)."""

import time

import numpy as np
import pytest

from scripts.benchmarks import bench_atari100k
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import settings as settings_lib
from zoo.environments import environment
from zoo.loops import driver
from zoo.loops import phase_accounting


def _settings(preset='QR-DQN-1'):
  return bench_atari100k.protocol_settings(
      agent_registry.presets()[preset], 'pong')


def test_the_run_is_the_protocols_and_its_slices_keep_its_frames():
  s = _settings('CR-DQN')
  assert (s.protocol, s.torso, s.n_steps, s.learn_period, s.num_envs) == (
      'atari100k', 'der', 10, 4, 1)
  assert s.num_iterations * s.num_train_frames == 400_000
  # 10 whole episodes after iterations 0 to 9, 100 after the last.
  assert bench_atari100k.run_eval_episodes(s) == 200
  cut = bench_atari100k.bench_settings(s, 2_000)
  assert (cut.num_train_frames, cut.num_iterations) == (2_000, 200)
  assert cut.epsilon_decay_frames() == s.epsilon_decay_frames() == 8_000
  assert cut.min_replay_size() == s.min_replay_size() == 1_600
  assert (cut.num_eval_episodes, cut.num_final_eval_episodes) == (1, 0)
  for frames in (0, 2_002, 3_200 * 4):
    with pytest.raises(ValueError, match=f'--slice_frames={frames}: pick'):
      bench_atari100k.bench_settings(s, frames)


def test_a_budget_evaluation_has_no_episode_count():
  s = settings_lib.resolve_settings(
      bench_atari100k.atari_suite.ATARI, agent_registry.presets()['CR-DQN'],
      dict(environment_name='pong'))
  with pytest.raises(ValueError, match='frame budget'):
    bench_atari100k.run_eval_episodes(s)


def test_the_warm_up_passes_the_learning_start():
  s = _settings()
  for frames, slices in ((2_000, 4), (4_000, 2), (3_200, 3), (400, 17)):
    cut = bench_atari100k.bench_settings(s, frames)
    n = bench_atari100k.warmup_slices(cut)
    assert n == slices
    # The last warm-up slice ends past the 1,600 steps learning needs.
    assert n * frames // 4 > 1_600 >= (n - 1) * frames // 4


ROUNDS = {
    'QR-DQN-1': {'train frames/s': [400.0, 500.0, 450.0],
                 'updates/s': [100.0, 125.0, 112.5],
                 'update ms': [6.0, 5.0, 7.0], 'update share': [.6, .5, .7],
                 'act ms/frame': [.2, .3, .25], 'env ms/frame': [.5, .5, .6],
                 'eval frames/s': [1_000.0, 2_000.0, 1_500.0],
                 'eval episode frames': [3_000.0, 3_400.0, 3_200.0]},
}


def _report(capsys, episode_frames):
  figures = bench_atari100k.report(ROUNDS, 400_000, 200, episode_frames, 20.0,
                                   'pong')
  return capsys.readouterr().out.splitlines(), {
      f['key']: f['value'] for f in figures}


def test_report_tables_medians_with_bounds_and_the_goal(capsys):
  lines, figures = _report(capsys, 0)
  row = [line for line in lines if line.startswith('| QR-DQN-1 | 450 ')]
  assert row and '| 450 [400, 500] |' in row[0]
  assert '| 60% [50%, 70%] |' in row[0]
  train = 400_000 / 450 / 60
  evaluation = 200 * 3_200 / 1_500 / 60
  slowest = 400_000 / 400 / 60 + 200 * 3_200 / 1_000 / 60
  fastest = 400_000 / 500 / 60 + 200 * 3_200 / 2_000 / 60
  fmt = bench_atari100k.fmt
  assert (f'| QR-DQN-1 | 3,200 | {fmt(train)} | {fmt(evaluation)} | '
          f'{fmt(train + evaluation)} [{fmt(fastest)}, {fmt(slowest)}] | '
          f'{(train + evaluation) / 20:.2f}x |') in lines
  key = 'atari100k.bench_atari100k.{}:QR-DQN-1'.format
  assert figures == {key('whole_run_min'): fmt(train + evaluation),
                     key('train_frames_per_s'): '450',
                     key('eval_frames_per_s'): '1,500',
                     key('update_share'): '60'}


def test_report_takes_the_given_episode_length(capsys):
  lines, _ = _report(capsys, 8_000)
  evaluation = 200 * 8_000 / 1_500 / 60
  assert any(line.startswith('| QR-DQN-1 | 8,000 | ') and
             f'| {bench_atari100k.fmt(evaluation)} |' in line
             for line in lines)


class FakeAgent:
  """Learns one update per 4 frames of training; each update takes 2 ms."""

  def __init__(self):
    self.num_updates = 0
    self.online_params = np.zeros(3)
    self.exploration_epsilon = 0.5
    self._select_action = lambda params, key, obs, eps: (key, obs[:, 0], obs)

  def learn(self):
    time.sleep(0.002)
    self.num_updates += 1
    return np.zeros(())


class FakeLoop:
  """The Python loop's train/evaluate: learning from frame 6,400 on."""

  def __init__(self, s):
    self.s = s
    self.agent = FakeAgent()
    self.learners = [self.agent]
    self.frames = 0
    self.evaluated = []
    self.closed = False

  def train(self, iteration, on_step):
    assert on_step is None
    learning = max(self.frames + self.s.num_train_frames - 6_400, 0)
    learning = min(learning, self.s.num_train_frames)
    self.frames += self.s.num_train_frames
    self.agent.num_updates += learning // 4
    stats = phase_accounting.PhaseStats(0.0, 1, self.s.num_train_frames,
                                        self.s.num_train_frames / 4.0, 4.0)
    return [driver.TrainResult(stats, 0.1, 0.0)]

  def evaluate(self, iteration, on_step):
    self.evaluated.append(iteration)
    return [phase_accounting.PhaseStats(-21.0, 1, 3_000, 1_500.0, 2.0)]

  def close(self):
    self.closed = True


class FakeEnv:
  num_envs, num_actions = 1, 4

  def reset(self):
    return environment.BatchedTimeStep(
        step_type=np.zeros(1, np.int8), reward=np.zeros(1),
        discount=np.ones(1), observation=np.zeros((1, 4)))

  def step(self, actions):
    time.sleep(0.001)
    return self.reset()

  def close(self):
    pass


def test_round_robin_measures_every_preset_each_round():
  s = bench_atari100k.bench_settings(_settings(), 2_000)
  presets = agent_registry.presets()
  loops = []

  def make_loop():
    loops.append(FakeLoop(s))
    return loops[-1]

  benches = [bench_atari100k.PresetBench(presets[name], s, make_loop,
                                         FakeEnv)
             for name in ('QR-DQN-1', 'CR-DQN')]
  # Four warm-up slices: the last one learns from frame 6,400 to 8,000.
  assert [loop.agent.num_updates for loop in loops] == [400, 400]
  results = harness.measure({b.name: lambda b=b: b.measure_round(3)
                             for b in benches}, 2)
  for bench, loop in zip(benches, loops):
    rounds = results[bench.name]
    assert list(rounds) == list(bench_atari100k.QUANTITIES)
    assert rounds['train frames/s'] == [500.0, 500.0]
    # 500 updates in each 4 s slice.
    assert rounds['updates/s'] == [125.0, 125.0]
    assert all(2 <= ms < 50 for ms in rounds['update ms'])
    assert rounds['update share'] == pytest.approx(
        [125 * ms / 1e3 for ms in rounds['update ms']])
    assert all(0.25 <= ms < 12 for ms in rounds['env ms/frame'])
    assert rounds['eval episode frames'] == [3_000.0, 3_000.0]
    assert loop.evaluated == [5, 6]  # One episode a round, after its slice.
    bench.close()
    assert loop.closed


def test_a_warm_up_without_updates_is_an_error():
  s = bench_atari100k.bench_settings(_settings(), 2_000)

  def make_loop():
    loop = FakeLoop(s)
    loop.train = lambda iteration, on_step: [driver.TrainResult(
        phase_accounting.PhaseStats(0.0, 1, 2_000, 500.0, 4.0), 1.0, 0.0)]
    return loop

  with pytest.raises(RuntimeError, match='QR-DQN-1: no update'):
    bench_atari100k.PresetBench(agent_registry.presets()['QR-DQN-1'], s,
                                make_loop, FakeEnv)
