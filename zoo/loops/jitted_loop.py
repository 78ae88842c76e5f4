"""The jitted loop (--loop=jitted): a group of seeds vmapped in one process.

A zoo.loops.driver adapter: `JittedLoop` jits zoo.loops.jitted_train's pure
functions in one place and runs each phase as compiled chunks, with Python
only between chunks and phases (docs/minatar-jitted-loop.md).
"""

import time
from typing import Any, Dict, List, Sequence

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from zoo.configuration import settings as settings_lib
from zoo.loops import build
from zoo.loops import driver
from zoo.loops import jitted_train
from zoo.loops import phase_accounting
from zoo.loops import resume
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read

# The runner runs the seeds as one group (one vmap axis).
VMAPS_SEEDS = True
# Training blocks per jitted chunk (at most): ~4,000 steps of K = 1, so that
# progress lines and Ctrl-C come every few seconds to a minute.
TARGET_CHUNK_BLOCKS = 1000


def loop_config(s: settings_lib.Settings, observation_shape
                ) -> jitted_train.LoopConfig:
  """Return the LoopConfig of resolved settings; ConfigError if unfit."""
  k = s.num_envs
  cfg = jitted_train.LoopConfig(
      num_streams=k, observation_shape=tuple(observation_shape),
      stream_capacity=s.replay_capacity // k, batch_size=s.batch_size,
      min_replay_size=s.min_replay_size(), learn_period=s.learn_period,
      target_period=s.target_network_update_period,
      max_abs_reward=s.max_abs_reward,
      eval_epsilon=s.eval_exploration_epsilon,
      epsilon=build.epsilon_schedule(s),
      num_train_frames=s.num_train_frames,
      num_eval_frames=s.num_eval_frames)
  problems = []
  if s.num_fused_updates != 1:
    problems.append(f'--num_fused_updates={s.num_fused_updates}: the '
                    'jitted loop runs the updates of a block in one call '
                    'already; leave it at 1')
  if s.replay_on_device:
    problems.append('--replay_on_device: the jitted loop\'s replay is on the '
                    'device already; leave it unset')
  if s.overlap_learning:
    problems.append('--overlap_learning: the Python loop\'s order; the '
                    'jitted loop acts and learns in one computation; leave '
                    'it unset')
  whole_updates = not (k % cfg.learn_period and cfg.learn_period % k)
  if not whole_updates:
    problems.append(f'--num_envs={k} and --learn_period={cfg.learn_period}: '
                    'one must divide the other (whole updates per block)')
  if k < cfg.learn_period and cfg.target_period % cfg.learn_period:
    problems.append(f'--target_network_update_period={cfg.target_period} '
                    f'must be a multiple of --learn_period={cfg.learn_period}')
  if whole_updates and cfg.num_train_frames % cfg.block_frames:
    problems.append(
        f'--num_train_frames={cfg.num_train_frames} must be a multiple of '
        f'{cfg.block_frames} frames (a block: --learn_period when '
        '--num_envs divides it, else --num_envs)')
  if problems:
    raise settings_lib.ConfigError('--loop=jitted: ' + '; '.join(problems)
                                   + '.')
  return cfg


def chunk_sizes(num_blocks: int, target: int = TARGET_CHUNK_BLOCKS
                ) -> List[int]:
  """Return equal chunks of a phase's blocks (one compiled scan length)."""
  size = max(d for d in range(1, min(num_blocks, target) + 1)
             if num_blocks % d == 0)
  return [size] * (num_blocks // size)


def huber_params(runs: Sequence[settings_lib.Settings]) -> jnp.ndarray:
  """Return the seeds' κ [S] float32: data of the compiled program."""
  return jnp.asarray([r.huber_param for r in runs], jnp.float32)


def phase_keys(seeds: Sequence[int], iteration: int, phase: str):
  """Return the environment keys [S, 2] of a phase (the Python loop's seeds)."""
  return jnp.stack([jax.random.PRNGKey(
      build.environment_seed(seed, iteration, phase)) for seed in seeds])


def _seed_slice(tree, index: int):
  return jax.tree.map(lambda x: np.asarray(x[index]), tree)


def _stack(trees):
  return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def save_checkpoints(runs: Sequence[settings_lib.Settings],
                     states: jitted_train.SeedState, iteration: int,
                     frame_t: int, rows: Sequence[List[Dict[str, Any]]]
                     ) -> None:
  """Checkpoint every seed in its run directory (its replay is part of the state)."""
  host = jax.device_get(states)
  for index, s in enumerate(runs):
    meta = resume.checkpoint_meta(s, iteration, rows[index], frame_t=frame_t)
    checkpoint.save(s.checkpoint_dir, iteration, meta,
                    _seed_slice(host, index)._asdict())


def load_checkpoints(paths: Sequence[str], template: jitted_train.SeedState
                     ) -> jitted_train.SeedState:
  """Return the seeds' states [S, ...] of checkpoints zoo.loops.resume accepted."""
  host = jax.device_get(template)
  trees = []
  for index, path in enumerate(paths):
    saved = checkpoint_read.load(path, _seed_slice(host, index)._asdict())
    trees.append(jitted_train.SeedState(**saved.tree))
  return _stack(trees)


def _phase_stats(streams: jitted_train.Streams, duration: float
                 ) -> List[phase_accounting.PhaseStats]:
  """Return each seed's PhaseStats (host streams); refuse non-binary frames."""
  if np.any(np.asarray(streams.non_binary)):
    raise ValueError('The environment emitted observations other than 0/1; '
                     "the jitted loop's replay stores bits. Use an "
                     'environment of binary observations.')
  return [phase_accounting.phase_stats(_seed_slice(streams.tally, i), duration)
          for i in range(streams.value_sum.shape[0])]


class _SeedLearner:
  """What the hooks read of one seed: frame, updates, latest loss."""

  def __init__(self, loop: 'JittedLoop'):
    self._loop = loop
    self.last_loss = None

  @property
  def frame_t(self) -> int:
    return self._loop.frame_t

  @property
  def num_updates(self) -> int:
    return self._loop.cfg.updates_done(self._loop.frame_t)


class JittedLoop(driver.Loop):
  """The seeds of a group, vmapped: one compiled program for all."""

  def __init__(self, cfg: jitted_train.LoopConfig,
               functions: jitted_train.Functions,
               runs: Sequence[settings_lib.Settings],
               parts: Sequence[build.LearnerParts]):
    """Jit the functions and start every seed at iteration 0.

    Args:
      cfg: the group's counts.
      functions: zoo.loops.jitted_train.make_train's; jitted here.
      runs: each seed's settings (vmapped in this order).
      parts: each seed's zoo.loops.build.learner_parts (key, ε schedule).
    """
    self.cfg = cfg
    self._runs = runs
    self._seeds = [r.seed for r in runs]
    self._epsilon = parts[0].epsilon
    # The one place where the pure functions are jitted.
    init = jax.jit(jax.vmap(functions.init))
    self._start_train = jax.jit(jax.vmap(functions.start_train))
    self._train_chunk = jax.jit(functions.train_chunk, static_argnums=2)
    self._eval_phase = jax.jit(functions.eval_phase)
    states = init(jnp.stack([p.agent_key for p in parts]),
                  phase_keys(self._seeds, 1, 'train'), huber_params(runs))
    # A real copy: the target must not share the online parameters' buffers.
    self._states = states._replace(
        target_params=jax.tree.map(jnp.copy, states.target_params))
    self.frame_t = 0
    self.learners = [_SeedLearner(self) for _ in runs]
    self._chunks = chunk_sizes(cfg.num_train_frames // cfg.block_frames)

  def restore(self, paths: Sequence[str]) -> None:
    self._states = load_checkpoints(paths, self._states)
    self.frame_t = int(checkpoint.load_meta(paths[0])['frame_t'])

  def train(self, iteration: int, on_step) -> List[driver.TrainResult]:
    states = self._start_train(self._states,
                               phase_keys(self._seeds, iteration, 'train'))
    begin = time.perf_counter()
    frames = 0
    for size in self._chunks:
      states, _, losses = self._train_chunk(states, jnp.int32(self.frame_t),
                                            size)
      self._states = states
      self.frame_t += size * self.cfg.block_frames
      frames += size * self.cfg.block_frames
      for learner, loss in zip(self.learners, np.asarray(losses)):
        if np.isfinite(loss):
          learner.last_loss = float(loss)
      on_step(frames)
    streams = jax.device_get(states.train_streams)
    duration = time.perf_counter() - begin
    epsilon = float(self._epsilon(self.frame_t))
    return [driver.TrainResult(stats, epsilon, float(streams.value_sum[i]) /
                               max(int(streams.value_count[i]), 1))
            for i, stats in enumerate(_phase_stats(streams, duration))]

  def evaluate(self, iteration: int, on_step
               ) -> List[phase_accounting.PhaseStats]:
    begin = time.perf_counter()
    self._states, streams = self._eval_phase(
        self._states, phase_keys(self._seeds, iteration, 'eval'))
    streams = jax.device_get(streams)
    duration = time.perf_counter() - begin
    stats = _phase_stats(streams, duration)
    on_step(stats[0].num_frames)
    return stats

  def save(self, iteration: int, rows) -> None:
    save_checkpoints(self._runs, self._states, iteration, self.frame_t, rows)


_FUNCTIONS: Dict[Any, jitted_train.Functions] = {}


def _functions(suite, s: settings_lib.Settings, cfg, env,
               parts: build.LearnerParts) -> jitted_train.Functions:
  """Return make_train's functions, reused for the same program.

  Reuse keeps JAX's compilations. The key is the checkpoint config but the
  seed and κ, which are the seeds' data.
  """
  config = dict(s.checkpoint_config(), seed=0, huber_param=0.0)
  key = (cfg, env, suite.name, tuple(sorted(config.items())))
  if key not in _FUNCTIONS:
    _FUNCTIONS[key] = jitted_train.make_train(
        cfg, env, parts.network, parts.loss_of_kappa, parts.optimizer,
        s.additional_discount, parts.grad_scale)
  return _FUNCTIONS[key]


def _environment(suite, s: settings_lib.Settings):
  """Return the suite's JAX environment of s's game; ConfigError if none."""
  if suite.jax_environment is None:
    raise settings_lib.ConfigError(
        f'--loop=jitted: the {suite.name} suite has no JAX environment; use '
        '--loop=python.')
  return suite.jax_environment(s)


def check(suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the jitted loop cannot run `s` (before any work)."""
  loop_config(s, _environment(suite, s).observation_shape)


def make(suite, preset, runs: Sequence[settings_lib.Settings], env=None
         ) -> driver.Loop:
  """Return the jitted loop of a group of seeds.

  Args:
    suite: the seeds' suite (its JAX environment and network).
    preset: the agent variant (log lines).
    runs: each seed's settings, resolved and checked by the runner.
    env: a JAX environment (tests); None: the suite's.
  """
  s = runs[0]
  if env is None:
    env = _environment(suite, s)
  cfg = loop_config(s, env.observation_shape)
  parts = [build.learner_parts(suite, r, env.num_actions) for r in runs]
  functions = _functions(suite, s, cfg, env, parts[0])
  logging.info(
      '%s (%s) on %s (%s), jitted loop: seeds %s vmapped, K = %d streams '
      'each, replay %.1f MB per seed (frames bit-packed); JAX device: %s',
      preset.name, s.agent, s.suite, s.environment_name,
      [r.seed for r in runs], cfg.num_streams,
      cfg.replay_bytes_per_seed / 1e6, jax.devices()[0])
  return JittedLoop(cfg, functions, runs, parts)
