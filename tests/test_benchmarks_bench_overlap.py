"""Tests for scripts.benchmarks.bench_overlap: its parsing, block sizes, tables,
and its round robin with fake variants (the benchmark itself prints measured
numbers and is not a test; a real run compiles the jitted Atari loop, tens of
seconds on a CPU)."""

import time
import types

import jax.numpy as jnp
import numpy as np
import pytest

from scripts.benchmarks import bench_overlap
from scripts.benchmarks import harness
from zoo.configuration import agent_registry
from zoo.configuration import settings as settings_lib
from zoo.loops import jitted_loop
from zoo.suites import atari_suite


def test_num_envs_list_parses_and_refuses_bad_items():
  assert bench_overlap.parse_num_envs('16,64') == [16, 64]
  for text in ('16,x', '0', ''):
    with pytest.raises(ValueError, match='positive stream counts'):
      bench_overlap.parse_num_envs(text)


def test_a_block_holds_whole_learn_periods():
  assert bench_overlap.block_updates(16, 4, 16) == 4
  assert bench_overlap.block_updates(64, 4, 16) == 16
  with pytest.raises(ValueError, match='K = 6.*not a whole number'):
    bench_overlap.block_updates(6, 4, 16)


def test_row_compares_with_max_and_the_jitted_loop_with_the_faster_order():
  row = bench_overlap.row({'stepping': 10.0, 'learning': 20.0,
                           'serial': 30.0, 'overlapped': 22.0,
                           'jitted': 5.0}, 64)
  assert set(row) == set(bench_overlap.COLUMNS)
  assert row['overlapped / max'] == '1.10'
  assert row['serial / max'] == '1.50'
  # Same frames for every loop: a block of 16 streams x 4 frames.
  assert row['jitted frames/s'] == '12,800'
  assert row['serial frames/s'] == f'{64e3 / 30:,.0f}'
  # The faster Python order is the overlapped one (22 ms).
  assert row['jitted vs Python loop'] == '4.4x'


class FakeAgent:
  def __init__(self, learning):
    self.num_updates = 1 if learning else 0
    self.online_params = self.acting_params = {'w': jnp.zeros(2)}
    self.learned = 0

  def learn(self):
    self.learned += 1
    time.sleep(2e-3)  # Long enough to show in the table's 0.1 ms.
    return 0.5


class FakeVariant:
  """The Python loop's variant: a fixed ms per block by its settings."""

  def __init__(self, settings, suite, learning, min_replay):
    del suite, min_replay
    self.agent = FakeAgent(learning)
    self.ms = 30.0 if settings.overlap_learning else 40.0 if learning else 10.0

  def run_blocks(self, num_blocks):
    assert num_blocks == 2
    return self.ms

  def close(self):
    pass


class FakeLoop:
  """jitted_loop.make's loop: phases of 8 ms per block, real counts."""

  def __init__(self, s):
    self.cfg = jitted_loop.loop_config(s, (84, 84, 4))
    self.frame_t = 0
    self.phases = 0
    self.states = types.SimpleNamespace(replay={'frames': np.zeros(
        (s.replay_capacity, 84 * 84), np.uint8)}, params={}, target_params={},
                                        opt_state={})
    self.learners = [types.SimpleNamespace(last_loss=None)]

  def train(self, iteration, on_step):
    self.phases += 1
    assert iteration == self.phases
    blocks = self.cfg.num_train_frames // self.cfg.block_frames
    self.frame_t += self.cfg.num_train_frames
    on_step(self.cfg.num_train_frames)
    if self.cfg.updates_done(self.frame_t):
      self.learners[0].last_loss = 0.25
    return [types.SimpleNamespace(stats=types.SimpleNamespace(
        duration=8e-3 * blocks))]

  def close(self):
    pass


@pytest.fixture
def fakes(monkeypatch):
  made = []

  def make(suite, preset, runs):
    del suite, preset
    run, = runs
    assert run.loop == 'jitted' and run.num_fused_updates == 1
    made.append(FakeLoop(run))
    return made[-1]

  monkeypatch.setattr(bench_overlap, 'Variant', FakeVariant)
  monkeypatch.setattr(bench_overlap.jitted_loop, 'make', make)
  monkeypatch.setattr(bench_overlap.jitted_loop, 'check',
                      lambda suite, s: None)
  return made


def _measure(**kwargs):
  args = dict(num_envs=16, overrides=dict(num_quantiles=3, batch_size=4),
              num_blocks=2, repeats=3, timing_repeats=1, replay_capacity=800,
              min_replay=200)
  args.update(kwargs)
  return bench_overlap.measure(
      atari_suite.ATARI, agent_registry.default_preset('cr_dqn'), 'pong',
      say=lambda line: None, **args)


def test_measure_times_the_jitted_loop_in_turns_past_its_learning_start(
    fakes):
  result = _measure()
  loop, = fakes
  # 200 transitions at 16 per block: learning from the 13th block on, so
  # seven warm-up phases of 2 blocks, then one phase a round.
  assert loop.phases == 7 + 3
  assert loop.cfg.updates_done(2 * 7 * 64) > 0
  assert loop.cfg.updates_done(2 * 6 * 64) == 0
  times = {name: t[harness.VALUE] for name, t in result['times'].items()}
  assert list(times) == list(bench_overlap.VARIANTS)
  assert (times['jitted'], times['stepping'], times['serial'],
          times['overlapped']) == ([8.0] * 3, [10.0] * 3, [40.0] * 3,
                                   [30.0] * 3)
  assert all(2 <= ms < 100 for ms in times['learning'])
  assert result['replay_bytes'] == 800 * 84 * 84


def test_the_jitted_loop_refuses_a_replay_short_of_its_minimum():
  s = settings_lib.resolve_settings(
      atari_suite.ATARI, agent_registry.default_preset('cr_dqn'),
      dict(settings_lib.default_settings(atari_suite.ATARI),
           environment_name='pong', num_envs=256, replay_capacity=2000,
           min_replay_capacity_fraction=0.99))
  with pytest.raises(settings_lib.ConfigError,
                     match=r'holds 1792 transitions \(7 per stream\)'):
    bench_overlap.check_jitted(atari_suite.ATARI, s)
