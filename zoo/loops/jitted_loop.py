"""The jitted MinAtar loop (--loop=jitted): seeds vmapped in one process.

`run` is the loop (zoo.suites.minatar_suite's suite lists it in `loops`; the runner,
zoo.loops.runner.run_seeds, hands it the seeds' checked settings with their
run directories held): it checks each seed's checkpoint with zoo.loops.resume
(verification, fallback, ownership, finished rows), then `run_group` jits
zoo.loops.jitted_train's pure functions in one place and runs the iterations of
zoo.loops.python_loop (iteration 0 evaluates only; each later one trains
num_train_frames, then evaluates num_eval_frames; environments seeded from
(seed, iteration, phase): evaluation fresh every phase, training as
zoo.loops.train_streams, fresh every phase at K = 1, made at iteration 1 and
going on at K > 1). Every seed writes its own run directory: results CSV,
run.json and checkpoints (the training streams in them), as the Python loop.
"""

import dataclasses
import math
import time
from typing import Any, Callable, Dict, List, NamedTuple, Optional, Sequence

from absl import logging
import jax
import jax.numpy as jnp
import numpy as np

from zoo.loops import build
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read
from zoo.loops import interrupts
from zoo.loops import jitted_train
from zoo.environments import minatar_env
from zoo.environments import minatar_jax_env
from zoo.loops import phase_accounting
from zoo.storage import results_csv
from zoo.loops import resume
from zoo.storage import run_json
from zoo.loops import python_loop
from zoo.configuration import settings as settings_lib

ConfigError = settings_lib.ConfigError
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
  if k % cfg.learn_period and cfg.learn_period % k:
    problems.append(f'--num_envs={k} and --learn_period={cfg.learn_period}: '
                    'one must divide the other (whole updates per block)')
  if k < cfg.learn_period and cfg.target_period % cfg.learn_period:
    problems.append(f'--target_network_update_period={cfg.target_period} '
                    f'must be a multiple of --learn_period={cfg.learn_period}')
  if cfg.num_train_frames % cfg.block_frames:
    problems.append(f'--num_train_frames={cfg.num_train_frames} must be a '
                    f'multiple of {cfg.block_frames} frames (a block: '
                    'max(--learn_period, --num_envs))')
  if problems:
    raise ConfigError('--loop=jitted: ' + '; '.join(problems) + '.')
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
  """Return the environment keys [S, 2] of a phase (zoo.loops.python_loop's seeds)."""
  return jnp.stack([jax.random.PRNGKey(
      python_loop.environment_seed(seed, iteration, phase)) for seed in seeds])


class Start(NamedTuple):
  """Where a group starts: iteration 0, or its seeds' checkpoints."""
  iteration: int                   # The next iteration to run.
  frame_t: int
  paths: Sequence[Optional[str]]   # Per seed: the checkpoint to restore.
  rows: List[List[Dict[str, Any]]]


def _seed_slice(tree, index: int):
  return jax.tree.map(lambda x: np.asarray(x[index]), tree)


def _stack(trees):
  return jax.tree.map(lambda *xs: jnp.stack(xs), *trees)


def save_checkpoints(runs: Sequence[settings_lib.Settings],
                     states: jitted_train.SeedState, iteration: int,
                     frame_t: int, rows: Sequence[List[Dict[str, Any]]]
                     ) -> None:
  """Checkpoint every seed in its run directory (zoo.storage.checkpoint.save).

  The replay is part of the state (a few MB per seed, bit-packed), so no
  replay chunks are written.
  """
  host = jax.device_get(states)
  for index, s in enumerate(runs):
    if not s.checkpoint_dir:
      continue
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


def _start(runs: Sequence[settings_lib.Settings]) -> Start:
  """Return where the group starts (zoo.loops.resume per seed); ConfigError if apart."""
  found = [resume.check_resume(s) for s in runs]
  if all(f is None for f in found):
    return Start(0, 0, [None] * len(runs), [[] for _ in runs])
  where = {s.seed: (f.meta['iteration'] if f else 0)
           for s, f in zip(runs, found)}
  if len(set(where.values())) > 1:
    raise ConfigError(
        'The seeds\' checkpoints stand at different iterations (next '
        f'iteration per seed: {where}); vmapped seeds resume together. Run '
        'the seeds that differ as their own --seeds group, or add --restart '
        'to start the group over (moves its files aside).')
  meta = found[0].meta
  return Start(meta['iteration'], int(meta['frame_t']),
               [f.path for f in found],
               [list(f.meta['rows'][:f.meta['iteration']]) for f in found])


def _check_interrupt(iteration: int, frame_t: int,
                     checkpointing: bool) -> None:
  signum = interrupts.pending()
  if signum is not None:
    raise resume.interrupted(signum, iteration, frame_t,
                             iteration if checkpointing else None)


def _check_observations(streams: jitted_train.Streams) -> None:
  if np.any(np.asarray(streams.non_binary)):
    raise ValueError('The environment emitted observations other than 0/1; '
                     "the jitted loop's replay stores bits. Use a binary "
                     'MinAtar environment.')


def run_group(*, cfg: jitted_train.LoopConfig,
              functions: jitted_train.Functions,
              runs: Sequence[settings_lib.Settings], environment_name: str,
              parts: Sequence[build.LearnerParts],
              start: Start, log: Callable[..., None] = logging.info
              ) -> List[List[Dict[str, Any]]]:
  """Run iterations start..num_iterations of every seed; return rows.

  Args:
    cfg: the group's counts.
    functions: zoo.loops.jitted_train.make_train's; jitted here.
    runs: each seed's settings (vmapped in this order; equal but for the
      seed and the paths).
    environment_name: the CSV's column ('minatar-breakout').
    parts: each seed's learner parts (zoo.loops.build.learner_parts): its key
      and the ε schedule.
    start: `_start`'s (checkpoints accepted by zoo.loops.resume, or none).
    log: where progress lines go.

  Raises:
    interrupts.Interrupted: a recorded SIGINT/SIGTERM, at a chunk boundary.
  """
  s = runs[0]
  seeds = [r.seed for r in runs]
  checkpointing = all(r.checkpoint_dir for r in runs)
  epsilon = parts[0].epsilon
  # The one place where the pure functions are jitted.
  init = jax.jit(jax.vmap(functions.init))
  start_train = jax.jit(jax.vmap(functions.start_train))
  train_chunk = jax.jit(functions.train_chunk, static_argnums=2)
  eval_phase = jax.jit(functions.eval_phase)

  states = init(jnp.stack([p.agent_key for p in parts]),
                phase_keys(seeds, 1, 'train'), huber_params(runs))
  # A real copy: the target must not share the online parameters' buffers.
  states = states._replace(target_params=jax.tree.map(jnp.copy,
                                                      states.target_params))
  frame_t, rows = start.frame_t, [list(r) for r in start.rows]
  if start.iteration:
    states = load_checkpoints(start.paths, states)
    log('Resumed seeds %s at iteration %d (frame %d).', seeds,
        start.iteration, frame_t)
    for run, seed_rows in zip(runs, rows):
      if run.results_csv_path:
        results_csv.write_rows(run.results_csv_path, seed_rows)
  _check_interrupt(start.iteration, frame_t, checkpointing)

  num_blocks = cfg.num_train_frames // cfg.block_frames
  chunks = chunk_sizes(num_blocks)
  for iteration in range(start.iteration, s.num_iterations + 1):
    train_stats = [None] * len(runs)
    if iteration > 0:
      begin = time.perf_counter()
      states = start_train(states, phase_keys(seeds, iteration, 'train'))
      last_line = begin
      for done, size in enumerate(chunks, 1):
        states, t = train_chunk(states, jnp.int32(frame_t), size)
        frame_t += size * cfg.block_frames
        t.block_until_ready()
        now = time.perf_counter()
        if (now - last_line >= s.progress_interval_seconds or
            done == len(chunks)):
          steps = done * size * cfg.steps_per_block
          rate = steps / (now - begin)
          left = (len(chunks) - done) * size * cfg.steps_per_block / rate
          log('Iteration %d/%d train: %d/%d frames per seed, %.0f steps/s per '
              'seed x %d seeds (%.0f in total), phase ETA %.0f s.',
              iteration, s.num_iterations, done * size * cfg.block_frames,
              cfg.num_train_frames, rate, len(runs), rate * len(runs), left)
          last_line = now
        _check_interrupt(iteration, frame_t, checkpointing)
      streams = jax.device_get(states.train_streams)
      duration = time.perf_counter() - begin
      _check_observations(streams)
      train_stats = [phase_accounting.phase_stats(
          _seed_slice(streams.tally, i), duration) for i in range(len(runs))]
    begin = time.perf_counter()
    states, eval_streams = eval_phase(
        states, phase_keys(seeds, iteration, 'eval'))
    eval_streams = jax.device_get(eval_streams)
    duration = time.perf_counter() - begin
    _check_observations(eval_streams)
    for index, run in enumerate(runs):
      eval_stats = phase_accounting.phase_stats(
          _seed_slice(eval_streams.tally, index), duration)
      value = (float(streams.value_sum[index]) /
               max(int(streams.value_count[index]), 1)
               if iteration > 0 else math.nan)
      row = results_csv.make_row(
          agent=run.agent, environment_name=environment_name,
          seed=run.seed, iteration=iteration,
          frame=iteration * cfg.num_train_frames, eval_stats=eval_stats,
          train_stats=train_stats[index],
          train_exploration_epsilon=epsilon(frame_t),
          train_state_value=value, normalized_return=math.nan)
      rows[index].append(row)
      if run.results_csv_path:
        results_csv.write_rows(run.results_csv_path, rows[index])
    log('Iteration %d/%d: eval return per seed %s (%.1f s eval).', iteration,
        s.num_iterations,
        ', '.join(f'{r[-1]["eval_episode_return"]:.2f}' for r in rows),
        duration)
    if checkpointing:
      save_checkpoints(runs, states, iteration, frame_t, rows)
    _check_interrupt(iteration + 1, frame_t, checkpointing)
  return rows


def make_environment(s: settings_lib.Settings):
  """Return the JAX environment of s's game; ConfigError if refused."""
  try:
    env = minatar_jax_env.make(s.environment_name,
                               max_episode_frames=s.max_frames_per_episode)
  except ValueError as e:  # A game the adapter refuses, with the reason.
    raise ConfigError(f'--loop=jitted: {e}') from e
  _, action_set = minatar_env.game_spec(s.environment_name)
  if env.num_actions != len(action_set):
    raise ConfigError(
        f'The JAX {s.environment_name} has {env.num_actions} actions, '
        f'minatar {len(action_set)}: the jitted loop refuses this game.')
  return env


_FUNCTIONS: Dict[Any, jitted_train.Functions] = {}


def _functions(suite, s: settings_lib.Settings, cfg, env,
               parts: build.LearnerParts) -> jitted_train.Functions:
  """Return make_train's functions, reused for the same settings and env.

  Reuse keeps JAX's compilations (a resumed group in one process, tests).
  κ is the seeds' data, not part of the functions: settings that differ
  only in κ share them.
  """
  key = (cfg, env, suite.name, dataclasses.replace(
      s, seed=0, huber_param=0.0, results_csv_path='', checkpoint_dir='',
      tensorboard_dir='', progress_interval_seconds=0.0,
      tensorboard_loss_period=0))
  if key not in _FUNCTIONS:
    _FUNCTIONS[key] = jitted_train.make_train(
        cfg, env, parts.network, parts.loss_of_kappa, parts.optimizer,
        s.additional_discount, parts.grad_scale)
  return _FUNCTIONS[key]


def run(suite, preset, runs: Sequence[settings_lib.Settings], env=None,
        log: Callable[..., None] = logging.info
        ) -> List[List[Dict[str, Any]]]:
  """Train/evaluate (or resume) the seeds vmapped; return rows.

  Args:
    suite: zoo.suites.minatar_suite.MINATAR.
    preset: the agent variant (a zoo.configuration.agent_registry.AgentPreset).
    runs: each seed's settings, resolved and checked by the runner, which
      holds their run directories (zoo.loops.runner.run_seeds).
    env: a JAX environment (tests); None: zoo.environments.minatar_jax_env's game.
    log: where progress lines go.

  Raises:
    ConfigError: bad settings or checkpoints, before any long work.
    interrupts.Interrupted: a recorded SIGINT/SIGTERM.
  """
  s, seeds = runs[0], [r.seed for r in runs]
  if env is None:
    env = make_environment(s)
  cfg = loop_config(s, env.observation_shape)
  start = _start(runs)
  if start.iteration > s.num_iterations:
    return resume.finished(runs, start.rows, log)
  for r in runs:
    if r.results_csv_path:
      run_json.write(r.results_csv_path, r.agent, r.suite, r.as_dict())
  parts = [build.learner_parts(suite, r, env.num_actions) for r in runs]
  functions = _functions(suite, s, cfg, env, parts[0])
  log('%s (%s) on %s (%s), jitted loop: seeds %s vmapped, K = %d streams '
      'each, replay %.1f MB per seed (frames bit-packed); JAX device: %s',
      preset.name, s.agent, s.suite, s.environment_name, list(seeds),
      cfg.num_streams, cfg.replay_bytes_per_seed / 1e6, jax.devices()[0])
  return run_group(cfg=cfg, functions=functions, runs=runs,
                   environment_name=suite.csv_prefix + s.environment_name,
                   parts=parts, start=start, log=log)
