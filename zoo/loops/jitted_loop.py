"""The jitted loop (--loop=jitted): acting, stepping and learning compiled.

A zoo.loops.driver adapter: `JittedLoop` jits zoo.loops.jitted_train's pure
functions in one place and runs each phase as compiled chunks, with Python
only between chunks and phases (docs/jitted-loop.md). The suite supplies
the K-stream JAX environment and its replay; a group's seeds run vmapped
where the environment allows it.
"""

import functools
import time
from typing import Any, Dict, List, Sequence

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from networks import layers
from zoo.agent import counts as counts_lib
from zoo.configuration import settings as settings_lib
from zoo.environments import environment
from zoo.loops import build
from zoo.loops import driver
from zoo.loops import jitted_train
from zoo.loops import phase_accounting
from zoo.loops import resume
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read


# Training blocks and frames per jitted chunk (at most): ~4,000 steps of
# MinAtar at K = 1, 16,384 Atari frames, so that progress lines and Ctrl-C
# come every few seconds to a minute (Atari on a CPU: a few minutes).
TARGET_CHUNK_BLOCKS = 1000
TARGET_CHUNK_FRAMES = 16_384


def vmaps_seeds(suite) -> bool:
  """Return whether the runner gives this loop all seeds as one group."""
  return suite.jax_vmaps_seeds


def loop_config(s: settings_lib.Settings, observation_shape
                ) -> counts_lib.Counts:
  """Return the counts of resolved settings; ConfigError if unfit."""
  k = s.num_envs
  cfg = build.counts(s, observation_shape)
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
  step = cfg.step_frames
  step_text = (f'a step of --num_envs={k} streams ({step} frames)' if
               cfg.num_action_repeats == 1 else
               f'a step of --num_envs={k} streams of {cfg.num_action_repeats} '
               f'frames ({step} frames)')
  whole_updates = not (step % cfg.learn_period and cfg.learn_period % step)
  if not whole_updates:
    problems.append(f'{step_text} and --learn_period={cfg.learn_period}: '
                    'one must divide the other (whole updates per block)')
  if step < cfg.learn_period and cfg.target_period % cfg.learn_period:
    problems.append(f'--target_network_update_period={cfg.target_period} '
                    f'must be a multiple of --learn_period={cfg.learn_period}')
  # A phase ends at the step that spends its budget, as the Python loop's:
  # with blocks of several steps, that step must end a block.
  if (whole_updates and cfg.steps_per_block > 1 and
      cfg.num_train_frames % cfg.block_frames):
    problems.append(
        f'--num_train_frames={cfg.num_train_frames} must be a multiple of '
        f'{cfg.block_frames} frames (a block of {cfg.steps_per_block} steps: '
        '--learn_period, which a step\'s frames divide)')
  if problems:
    raise settings_lib.ConfigError('--loop=jitted: ' + '; '.join(problems)
                                   + '.')
  return cfg


def chunk_sizes(num_blocks: int, target: int = TARGET_CHUNK_BLOCKS
                ) -> List[int]:
  """Return a phase's blocks in chunks of `target`, then the rest.

  At most two scan lengths are compiled.
  """
  full, rest = divmod(num_blocks, target)
  return [target] * full + ([rest] if rest else [])


def huber_params(runs: Sequence[settings_lib.Settings]) -> jnp.ndarray:
  """Return the seeds' κ [S] float32: data of the compiled program."""
  return jnp.asarray([r.huber_param for r in runs], jnp.float32)


def phases(seeds: Sequence[int], num_envs: int, iteration: int, phase: str
           ) -> jitted_train.Phase:
  """Return the seeds' Phase [S] (the Python loop's environment seeds)."""
  env_seeds = [build.environment_seed(seed, iteration, phase)
               for seed in seeds]
  return jitted_train.Phase(
      key=jnp.stack([jax.random.PRNGKey(e) for e in env_seeds]),
      seeds=jnp.asarray(np.stack([environment.stream_seeds(e, num_envs)
                                  for e in env_seeds]), jnp.int32))


def _seed_slice(tree, index: int):
  return jax.tree.map(lambda x: np.asarray(x[index]), tree)


def _stack(trees):
  return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def _phase_stats(streams: jitted_train.Streams, duration: float, replay
                 ) -> List[phase_accounting.PhaseStats]:
  """Return each seed's PhaseStats (host streams); raise what replay refused."""
  if np.any(np.asarray(streams.non_binary)):
    raise settings_lib.ConfigError(replay.refusal)
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
  """The seeds of a group: one compiled program for all."""

  def __init__(self, cfg: counts_lib.Counts,
               functions: jitted_train.Functions,
               runs: Sequence[settings_lib.Settings],
               parts: Sequence[build.LearnerParts], envs, replay):
    """Start every seed at iteration 0; `states` is their SeedState [S, ...].

    Args:
      cfg: the group's counts.
      functions: jitted_functions' (mapped over the seeds and jitted).
      runs: each seed's settings (vmapped in this order).
      parts: each seed's zoo.loops.build.learner_parts.
      envs: the (training, evaluation) K-stream JAX environments.
      replay: the functions' zoo.replay.device_replay.JaxReplay.
    """
    self.cfg = cfg
    self._runs = runs
    self._seeds = [r.seed for r in runs]
    self._envs = envs
    self._replay = replay
    train_env, eval_env = envs
    self._functions = functions
    self._train_env_states = _stack([train_env.initial_state()] * len(runs))
    self._eval_env_states = _stack([eval_env.initial_state()] * len(runs))
    states = functions.init(jnp.stack([p.agent_key for p in parts]),
                            self._phases(1, 'train'), huber_params(runs),
                            self._train_env_states)
    # A real copy: the target must not share the online parameters' buffers.
    self.states = states._replace(
        target_params=jax.tree.map(jnp.copy, states.target_params))
    self._restart_streams = False
    self.frame_t = 0
    self.learners = [_SeedLearner(self) for _ in runs]
    self._chunks = chunk_sizes(
        -(-cfg.num_train_frames // cfg.block_frames),
        min(TARGET_CHUNK_BLOCKS, max(TARGET_CHUNK_FRAMES // cfg.block_frames,
                                     1)))

  def _phases(self, iteration: int, phase: str) -> jitted_train.Phase:
    return phases(self._seeds, self.cfg.num_streams, iteration, phase)

  def restore(self, paths: Sequence[str]) -> None:
    host = jax.device_get(self.states)
    saved = [checkpoint_read.load(path, _seed_slice(host, i)._asdict())
             for i, path in enumerate(paths)]
    self.states = _stack([jitted_train.SeedState(**x.tree) for x in saved])
    self.frame_t = int(saved[0].meta['frame_t'])
    if not self._envs[0].restores:
      self._restart_streams = True
      logging.info('Resuming with fresh training streams: the emulators\' '
                   'state is not in the checkpoint, so the episodes running '
                   'at it are cut.')

  def train(self, iteration: int, on_step) -> List[driver.TrainResult]:
    phase = self._phases(iteration, 'train')
    if self._restart_streams:
      states = self._functions.restart(self.states, phase,
                                       self._train_env_states)
      self._restart_streams = False
    else:
      states = self._functions.start_train(self.states, phase)
    begin = time.perf_counter()
    frames = 0
    for size in self._chunks:
      states, _, losses = self._functions.train_chunk(
          states, jnp.int32(self.frame_t), size)
      self.states = states
      self.frame_t += size * self.cfg.block_frames
      frames += size * self.cfg.block_frames
      for learner, loss in zip(self.learners, np.asarray(losses)):
        if np.isfinite(loss):
          learner.last_loss = float(loss)
      on_step(frames)
    streams = jax.device_get(states.train_streams)
    duration = time.perf_counter() - begin
    epsilon = float(self.cfg.epsilon(self.frame_t))
    return [driver.TrainResult(stats, epsilon, float(streams.value_sum[i]) /
                               max(int(streams.value_count[i]), 1))
            for i, stats in enumerate(
                _phase_stats(streams, duration, self._replay))]

  def evaluate(self, iteration: int, on_step
               ) -> List[phase_accounting.PhaseStats]:
    begin = time.perf_counter()
    eval_rng_key, streams = self._functions.eval_seed(
        self.states.params, self.states.eval_rng_key,
        self._phases(iteration, 'eval'), self._eval_env_states)
    self.states = self.states._replace(eval_rng_key=eval_rng_key)
    self._eval_env_states = streams.env_state  # Threads the emulators' handle.
    streams = jax.device_get(streams)
    duration = time.perf_counter() - begin
    stats = _phase_stats(streams, duration, self._replay)
    on_step(stats[0].num_frames)
    return stats

  def save(self, iteration: int, rows) -> None:
    """Checkpoint every seed (its replay is part of its state)."""
    host = jax.device_get(self.states)
    for i, s in enumerate(self._runs):
      meta = resume.checkpoint_meta(s, iteration, rows[i],
                                    frame_t=self.frame_t)
      checkpoint.save(s.checkpoint_dir, iteration, meta,
                      _seed_slice(host, i)._asdict())

  def close(self) -> None:
    for env in self._envs:
      env.close()


_FUNCTIONS: Dict[Any, jitted_train.Functions] = {}


def jitted_functions(functions: jitted_train.Functions, vmaps: bool
                     ) -> jitted_train.Functions:
  """Return make_train's functions over a group's seeds, jitted.

  The one place where the pure functions are jitted. The training chunk
  donates its states: the replay is written in place, not copied. Traced
  with convolutions as patches on a CPU, where XLA would run the updates'
  convolutions in the chunk's loop body slowly
  (networks.layers.convolutions_as_patches_on_cpu).
  """

  def patches(fn):
    @functools.wraps(fn)
    def traced(*args, **kwargs):
      with layers.convolutions_as_patches_on_cpu():
        return fn(*args, **kwargs)
    return traced

  over_seeds = lambda fn: jax.jit(patches(jitted_train.map_seeds(fn, vmaps)))
  return jitted_train.Functions(
      init=over_seeds(functions.init),
      start_train=over_seeds(functions.start_train),
      restart=over_seeds(functions.restart),
      train_chunk=jax.jit(patches(functions.train_chunk), static_argnums=2,
                          donate_argnums=0),
      eval_seed=over_seeds(functions.eval_seed))


def _functions(suite, s: settings_lib.Settings, cfg, env, replay,
               parts: build.LearnerParts, network_fn=None
               ) -> jitted_train.Functions:
  """Return the jitted functions of the program, reused for the same one.

  Reuse keeps JAX's compilations. The key is the checkpoint config but the
  seed and κ, which are the seeds' data, the environment (equal ones run
  one program) and a test's network fn.
  """
  config = dict(s.checkpoint_config(), seed=0, huber_param=0.0)
  key = (cfg, env, suite.name, tuple(sorted(config.items())), network_fn)
  if key not in _FUNCTIONS:
    _FUNCTIONS[key] = jitted_functions(jitted_train.make_train(
        cfg, env, replay, parts.network, parts.loss_of_kappa,
        parts.optimizer), env.vmaps)
  return _FUNCTIONS[key]


def checkpoint_transitions(s: settings_lib.Settings) -> int:
  """Return the most replay transitions the run's checkpoints hold at once.

  Each checkpoint holds the whole replay; a save writes its own before the
  older of the two it keeps goes: three replays at once.
  """
  return 3 * s.replay_capacity


def check(suite, s: settings_lib.Settings) -> None:
  """Raise ConfigError if the jitted loop cannot run `s` (makes nothing)."""
  if suite.jax_environment is None:
    raise settings_lib.ConfigError(
        f'--loop=jitted: the {suite.name} suite has no JAX environment; use '
        '--loop=python.')
  for name in ('num_eval_episodes', 'num_final_eval_episodes'):
    if getattr(s, name):
      # The jitted evaluation counts a frame budget; counting episodes needs
      # phase_accounting's num_episodes in its evaluation scan.
      raise settings_lib.ConfigError(
          f'--loop=jitted evaluates by --num_eval_frames only; --{name}='
          f'{getattr(s, name)} needs --loop=python (or --{name}=0).')
  loop_config(s, suite.observation_shape(s))


def make(suite, preset, runs: Sequence[settings_lib.Settings], env=None,
         network_fn=None) -> driver.Loop:
  """Return the jitted loop of a group of seeds.

  Args:
    suite: the seeds' suite (its JAX environment, replay and network).
    preset: the agent variant (log lines).
    runs: each seed's settings, resolved and checked by the runner.
    env: a K-stream JAX environment whose state is data, for both phases
      (tests); None: the suite's, one for training, one for evaluation.
    network_fn: the Haiku network fn (tests); None: the suite's.
  """
  s = runs[0]
  envs = ((env, env) if env is not None else
          (suite.jax_environment(s), suite.jax_environment(s)))
  env = envs[0]
  if len(runs) > 1 and not env.vmaps:
    raise settings_lib.ConfigError(
        f'--loop=jitted: {suite.name} runs one seed per group, got '
        f'{len(runs)}.')
  cfg = loop_config(s, env.observation_shape)
  replay = suite.jax_replay(env, build.n_step(s))
  parts = [build.learner_parts(suite, r, env.num_actions, network_fn)
           for r in runs]
  functions = _functions(suite, s, cfg, env, replay, parts[0], network_fn)
  logging.info(
      '%s (%s) on %s (%s), jitted loop: seeds %s%s, K = %d streams each, '
      'replay %.2f GB per seed; JAX device: %s', preset.name, s.agent,
      s.suite, s.environment_name, [r.seed for r in runs],
      ' vmapped' if env.vmaps else '', cfg.num_streams,
      replay.nbytes(cfg.num_streams, cfg.stream_capacity) / 1e9,
      jax.devices()[0])
  return JittedLoop(cfg, functions, runs, parts, envs, replay)
