"""Train and evaluate a quantile agent on a suite of games (every suite, agent).

A `Suite` (zoo.run_atari.ATARI, zoo.run_minatar.MINATAR) says which games
exist, how to build one phase's environment, the network's torso and its flag
defaults. Everything else is shared: the flags (DQN Zoo's names and Atari
defaults, counted in environment frames), validation before any work, the
agent and replay, the run loop, CSV and checkpoints. The agent fixes the
network head and the loss (README, "Agents"); each agent package's
`run_<suite>.py` calls `main(argv, suite, agent_name)`.
"""

import os
import shutil
import sys
from typing import (Any, Callable, Dict, List, Mapping, NamedTuple, Optional,
                    Tuple)

from absl import flags
from absl import logging
import haiku as hk
import jax
import numpy as np

import networks
from zoo import agent as agent_lib
from zoo import checkpoint
from zoo import count_flags
from zoo import device_replay
from zoo import environment
from zoo import files
from zoo import interrupts
from zoo import progress
from zoo import replay as replay_lib
from zoo import results_csv
from zoo import run_directory
from zoo import run_json
from zoo import run_loop
from zoo import tensorboard_writer

AGENTS = {  # agent -> (network head, loss)
    'qr_dqn': ('fc', 'qr'),
    'cr_dqn': ('fc', 'cramer'),
    'nc_cr_dqn': ('nc', 'cramer'),
    'nc_qr_dqn': ('nc', 'qr'),
}

FLAGS = flags.FLAGS
flags.DEFINE_string('environment_name', 'pong', 'Game of the suite.')
flags.DEFINE_integer('environment_height', 84, 'Processed frame height.')
flags.DEFINE_integer('environment_width', 84, 'Processed frame width.')
count_flags.DEFINE_count('replay_capacity', int(1e6),
                         'Transitions (all streams).')
flags.DEFINE_float('min_replay_capacity_fraction', 0.05,
                   'Learning starts once the replay holds this fraction.')
flags.DEFINE_integer('batch_size', 32, 'Transitions per update.')
count_flags.DEFINE_count('max_frames_per_episode', 108000,
                         'Episode frame cap.')
flags.DEFINE_integer('num_action_repeats', 4, 'Frames per agent step.')
flags.DEFINE_integer('num_stacked_frames', 4, 'Frames per observation.')
flags.DEFINE_float('exploration_epsilon_begin_value', 1.0, 'Initial ε.')
flags.DEFINE_float('exploration_epsilon_end_value', 0.01, 'Final ε.')
flags.DEFINE_float('exploration_epsilon_decay_frame_fraction', 0.02,
                   'ε decays over this fraction of all training frames.')
flags.DEFINE_float('eval_exploration_epsilon', 0.001, 'ε when evaluating.')
count_flags.DEFINE_count('target_network_update_period', int(4e4),
                         'Frames between target network copies.')
flags.DEFINE_float('learning_rate', 5e-5, 'Adam learning rate.')
flags.DEFINE_float(
    'optimizer_epsilon', None,
    "Adam's ε. Unset: derived from the agent (README, Agents): 0.01/32 for QR "
    'losses, (0.01/32)*(2/num_quantiles) for the Cramér loss or with '
    '--scale_grad.')
flags.DEFINE_float('additional_discount', 0.99, 'γ applied to env discounts.')
flags.DEFINE_float('max_abs_reward', 1.0, 'Rewards clipped to ± this.')
flags.DEFINE_float('max_global_grad_norm', 10.0,
                   'Gradient clipping norm (<= 0: no clipping).')
flags.DEFINE_integer('num_iterations', 200, 'Training iterations.')
count_flags.DEFINE_count('num_train_frames', int(1e6),
                         'Frames per iteration.')
count_flags.DEFINE_count('num_eval_frames', int(5e5),
                         'Eval frames per iteration.')
count_flags.DEFINE_count('learn_period', 16, 'Frames between updates.')
flags.DEFINE_integer('num_quantiles', 201, 'Atoms N per action.')
flags.DEFINE_float('huber_param', 1.0, 'QR loss κ (0: plain QR loss).')
flags.DEFINE_integer('seed', 1, 'Run seed (environments, network, replay).')
# Per-run defaults, so that the plain command checkpoints and resumes, and two
# runs never write to the same place.
flags.DEFINE_string('results_csv_path',
                    'runs/{agent}/{environment_name}/seed_{seed}/results.csv',
                    'Run CSV (one row per iteration); {agent}, '
                    '{environment_name} and {seed} are filled in; empty: none.')
flags.DEFINE_string('checkpoint_dir', '{results_dir}/checkpoints',
                    'Checkpoint directory, resumed from when it holds one; '
                    "{results_dir} is the results CSV's directory (and the "
                    'placeholders of --results_csv_path); empty: none.')
flags.DEFINE_enum('head', None, ['fc', 'nc'],
                  'Network head; unset: the agent\'s.')
flags.DEFINE_enum('loss', None, ['qr', 'cramer'],
                  'Loss; unset: the agent\'s.')
flags.DEFINE_bool('scale_grad', False,
                  'Multiply the gradient by 2/N (NC-QR-DQN-0).')
flags.DEFINE_enum('nc_scale_activation', 'relu', ['relu', 'softplus'],
                  'NC head: activation of the scale α.')
flags.DEFINE_integer('num_hidden_layers', 1, 'Head hidden layers λ.')
flags.DEFINE_integer('hidden_size', 512, 'Head hidden units η.')
flags.DEFINE_integer(
    'num_envs', 1,
    'Environment streams K acting in lockstep, one batched action selection '
    'per step; every count (epsilon schedule, learn and target periods, '
    'train/eval frames) is in frames summed over the streams, and the replay '
    'capacity in transitions over all streams, so one update per '
    '--learn_period frames holds for any K. 1 (default): the reference '
    'mode, DQN Zoo exactly. '
    'Default chosen from benchmarks.bench_agent on a 2-core CPU, where the '
    'update takes 70-95% of the time and vector K=16 trained only 1.1-1.35x '
    'faster: too little to depart from the DQN Zoo protocol by default '
    '(zoo.vector_env lists the differences). Where the update is cheap '
    '(accelerator), use --num_envs=16.')
flags.DEFINE_enum('environment_mode', 'auto', ['auto', 'reference', 'vector'],
                  "Atari: streams as Python envs ('reference') or ale_py's "
                  "AtariVectorEnv ('vector'); auto: vector when num_envs > 1. "
                  'MinAtar: reference only.')
# Issue 11: watching long runs (what they show, not what they compute).
flags.DEFINE_string(
    'tensorboard_dir', '{results_dir}/tensorboard',
    'TensorBoard event files: per-iteration scalars and the training loss; '
    '{results_dir} is the results CSV\'s directory (and the placeholders of '
    '--results_csv_path); empty: none.')
count_flags.DEFINE_count('tensorboard_loss_period', 8000,
                         'Frames between training-loss scalars '
                         '(--tensorboard_loss_period / --learn_period '
                         'updates).')
flags.DEFINE_float('progress_interval_seconds', 30.0,
                   'Seconds between progress lines within a phase (<= 0: '
                   'none).')

# Issue 10: learner options for fast accelerators (README, "Training
# throughput"); the defaults are the CPU's best, today's learner exactly.
flags.DEFINE_integer(
    'num_fused_updates', 1,
    'U: updates that fall due are held until U are, then run as one jitted '
    'dispatch (U sequential Adam steps on U batches sampled at once). Same '
    'updates and target copies per frame; acting lags the learner by at '
    'most U - 1 updates. 1: no fusion (DQN Zoo).')
flags.DEFINE_bool(
    'replay_on_device', False,
    'Mirror the replay on the JAX device: each step uploads its new frames, '
    'and the update samples and assembles its batches itself. Doubles the '
    "replay's memory (host copy kept for checkpoints); for accelerators.")

# Settings added after checkpoints were first written, with the value that
# reproduces the behaviour before them: a checkpoint without one resumes when
# the run keeps that value (zoo.run_loop.config_differences).
IMPLIED_SETTINGS = {'suite': 'atari', 'num_fused_updates': 1,
                    'replay_on_device': False}
# Flags that name where a run writes, not what it computes.
_PATH_FLAGS = ('results_csv_path', 'checkpoint_dir', 'tensorboard_dir')
# Flags that change what a run shows, not what it computes.
_DISPLAY_FLAGS = ('tensorboard_loss_period', 'progress_interval_seconds')
SETTINGS = tuple(
    name for name in (
        'environment_name', 'environment_height', 'environment_width',
        'replay_capacity', 'min_replay_capacity_fraction', 'batch_size',
        'max_frames_per_episode', 'num_action_repeats', 'num_stacked_frames',
        'exploration_epsilon_begin_value', 'exploration_epsilon_end_value',
        'exploration_epsilon_decay_frame_fraction', 'eval_exploration_epsilon',
        'target_network_update_period', 'learning_rate', 'optimizer_epsilon',
        'additional_discount', 'max_abs_reward', 'max_global_grad_norm',
        'num_iterations', 'num_train_frames', 'num_eval_frames',
        'learn_period', 'num_quantiles', 'huber_param', 'seed',
        'results_csv_path', 'checkpoint_dir', 'head', 'loss', 'scale_grad',
        'nc_scale_activation', 'num_hidden_layers', 'hidden_size', 'num_envs',
        'environment_mode', 'tensorboard_dir', 'tensorboard_loss_period',
        'progress_interval_seconds', 'num_fused_updates',
        'replay_on_device'))


flags.declare_key_flag('restart')  # zoo.run_directory's; --help lists it.


class ConfigError(ValueError):
  """A bad setting, reported before any long work."""


class Suite(NamedTuple):
  """What differs between families of games; everything else is shared.

  Attributes:
    name: 'atari' or 'minatar' (log lines, saved settings, default paths).
    csv_prefix: put before the game in the CSV's environment_name column,
      so that games of two suites with one name never mix ('' for Atari,
      whose runs compare with the published ones; 'minatar-' for MinAtar).
    check_game: fn(name) -> name; raises a ValueError listing the games.
    flag_defaults: flag values that differ from the Atari defaults above.
    resolve: fn(settings) -> settings, filling suite-specific 'auto' values.
    validate: fn(settings) -> None; raises ConfigError for suite-specific
      limits (run after the shared checks).
    observation_shape: fn(settings) -> per-stream observation shape
      (*frame_shape, num_stacked_frames).
    make_environment: fn(settings, seed) -> a fresh BatchedEnvironment.
    network_fn: fn(settings, num_actions) -> Haiku fn(observations) ->
      QuantileNetworkOutputs.
    normalize: fn(game, score) -> normalised score (NaN where the suite
      has no reference scores).
    render: fn(environment) -> [K, H, W, 3] uint8, the RGB screens of the
      streams of an environment made by make_environment with
      environment_mode='reference' (videos of analysis.evaluate); None where
      the suite cannot render.
  """
  name: str
  csv_prefix: str
  check_game: Callable[[str], str]
  flag_defaults: Mapping[str, Any]
  resolve: Callable[[Dict[str, Any]], Dict[str, Any]]
  validate: Callable[[Dict[str, Any]], None]
  observation_shape: Callable[[Dict[str, Any]], Tuple[int, ...]]
  make_environment: Callable[[Dict[str, Any], int],
                             environment.BatchedEnvironment]
  network_fn: Callable[[Dict[str, Any], int], Callable]
  normalize: Callable[[str, float], float]
  render: Optional[Callable[[environment.BatchedEnvironment],
                            np.ndarray]] = None


def settings_from_flags() -> Dict[str, Any]:
  return {name: FLAGS[name].value for name in SETTINGS}


def default_settings(suite: Suite) -> Dict[str, Any]:
  """Return the suite's defaults of every setting (as its entry point has)."""
  settings = {name: FLAGS[name].default for name in SETTINGS}
  settings.update(suite.flag_defaults)
  return settings


def set_flag_defaults(suite: Suite) -> None:
  """Make the suite's defaults the flags' (before parsing: --help shows them)."""
  for name, value in suite.flag_defaults.items():
    FLAGS.set_default(name, value)


def resolve_settings(suite: Suite, agent_name: str, settings: Dict[str, Any]
                     ) -> Dict[str, Any]:
  """Fill the agent's head, loss, Adam ε and path placeholders; resolve mode."""
  if agent_name not in AGENTS:
    raise ConfigError(f'Unknown agent {agent_name!r}; one of {sorted(AGENTS)}.')
  settings = dict(settings)
  fields = dict(agent=agent_name, environment_name=settings['environment_name'],
                seed=settings['seed'], suite=suite.name, results_dir='')
  for name in _PATH_FLAGS:  # results_csv_path first: it gives results_dir.
    value = settings.get(name) or ''
    if '{results_dir}' in value and not fields['results_dir']:
      value = ''  # Next to a CSV that is not written: nowhere.
    settings[name] = value.format(**fields)
    if name == 'results_csv_path' and settings[name]:
      fields['results_dir'] = os.path.dirname(settings[name]) or '.'
  head, loss = AGENTS[agent_name]
  settings['head'] = settings.get('head') or head
  settings['loss'] = settings.get('loss') or loss
  if settings.get('optimizer_epsilon') is None and settings['num_quantiles'] > 0:
    settings['optimizer_epsilon'] = agent_lib.default_optimizer_epsilon(
        settings['loss'], settings['num_quantiles'], settings['scale_grad'])
  return suite.resolve(settings)


def _check_writable(directory: str, what: str) -> None:
  try:
    files.make_writable_directory(directory)
  except OSError as e:
    raise ConfigError(f'Cannot write the {what} in {directory!r} ({e}); pass '
                      'a writable path.') from e


def validate_settings(suite: Suite, s: Dict[str, Any]) -> None:
  """Raise ConfigError naming the first bad setting and its fix."""
  try:
    suite.check_game(s['environment_name'])
  except ValueError as e:
    raise ConfigError(str(e)) from e
  for name in ('environment_height', 'environment_width', 'replay_capacity',
               'batch_size', 'max_frames_per_episode', 'num_action_repeats',
               'num_stacked_frames', 'target_network_update_period',
               'num_train_frames', 'num_eval_frames', 'learn_period',
               'num_quantiles', 'num_hidden_layers', 'hidden_size',
               'num_envs', 'num_fused_updates'):
    if s[name] <= 0:
      raise ConfigError(f'--{name} must be positive, got {s[name]}.')
  if s['num_iterations'] < 0:
    raise ConfigError(f'--num_iterations must be >= 0, got '
                      f'{s["num_iterations"]}.')
  if not 0 < s['min_replay_capacity_fraction'] <= 1:
    raise ConfigError('--min_replay_capacity_fraction must lie in (0, 1], '
                      f'got {s["min_replay_capacity_fraction"]}.')
  for name in ('exploration_epsilon_begin_value',
               'exploration_epsilon_end_value', 'eval_exploration_epsilon',
               'additional_discount'):
    if not 0 <= s[name] <= 1:
      raise ConfigError(f'--{name} must lie in [0, 1], got {s[name]}.')
  for name in ('learning_rate', 'optimizer_epsilon', 'max_abs_reward'):
    if s[name] <= 0:
      raise ConfigError(f'--{name} must be positive, got {s[name]}.')
  if s['huber_param'] < 0:
    raise ConfigError(f'--huber_param must be >= 0, got {s["huber_param"]}.')
  if s['exploration_epsilon_decay_frame_fraction'] < 0:
    raise ConfigError('--exploration_epsilon_decay_frame_fraction must be '
                      '>= 0.')
  min_replay = min_replay_size(s)
  if s['batch_size'] > min_replay:
    raise ConfigError(
        f'--batch_size={s["batch_size"]} exceeds the minimum replay size '
        f'{min_replay} (= min_replay_capacity_fraction * replay_capacity); '
        'raise the replay or lower the batch.')
  if s['replay_capacity'] // s['num_envs'] < s['num_stacked_frames'] + 1:
    raise ConfigError('--replay_capacity must hold at least '
                      f'{s["num_stacked_frames"] + 1} steps per stream.')
  if s['replay_on_device']:
    _check_replay_fits_on_device(suite, s)
  suite.validate(s)
  if s['results_csv_path']:
    if os.path.isdir(s['results_csv_path']):
      raise ConfigError(
          f'--results_csv_path={s["results_csv_path"]} is a directory; pass a '
          'file path, e.g. '
          f'{os.path.join(s["results_csv_path"], "results.csv")}.')
    _check_writable(os.path.dirname(os.path.abspath(s['results_csv_path'])),
                    'results CSV')
  for name, what in (('checkpoint_dir', 'checkpoints'),
                     ('tensorboard_dir', 'TensorBoard events')):
    if s.get(name):
      if os.path.isfile(s[name]):
        raise ConfigError(f'--{name}={s[name]} is a file; pass a directory '
                          f"(or --{name}='' for no {what}).")
      _check_writable(s[name], what)
  if s['checkpoint_dir']:
    check_checkpoint_disk(suite, s)


def replay_checkpoint_bytes(suite: Suite, s: Dict[str, Any]) -> int:
  """Return the most replay bytes a run's checkpoints hold on disk at once.

  A full replay plus one iteration's new steps (written before the steps
  they replace are deleted), or the whole run's steps if fewer.
  """
  frame_shape = tuple(suite.observation_shape(s))[:-1]
  steps_per_iteration = -(-s['num_train_frames'] // s['num_action_repeats'])
  transitions = min(s['replay_capacity'] + steps_per_iteration,
                    s['num_iterations'] * steps_per_iteration)
  return replay_lib.replay_bytes(transitions, frame_shape)


def check_checkpoint_disk(suite: Suite, s: Dict[str, Any]) -> None:
  """Raise ConfigError if the checkpoint disk cannot hold the run's replay."""
  directory = s['checkpoint_dir']
  needed = replay_checkpoint_bytes(suite, s)
  replay_dir = os.path.join(directory, checkpoint.REPLAY_DIR)
  saved = 0  # A resumed run's chunks are on the disk already.
  for root, _, names in os.walk(replay_dir):
    saved += sum(os.path.getsize(os.path.join(root, n)) for n in names)
  free = shutil.disk_usage(directory).free
  if needed - saved > free:
    frame_shape = tuple(suite.observation_shape(s))[:-1]
    raise ConfigError(
        f'The disk of --checkpoint_dir={directory} has {free / 1e9:.2f} GB '
        f'free; this run\'s checkpoints need {needed / 1e9:.2f} GB for the '
        f'replay ({needed // replay_lib.replay_bytes(1, frame_shape):,} '
        f'transitions of {replay_lib.replay_bytes(1, frame_shape):,} B: '
        '--replay_capacity plus one iteration\'s new steps), of which '
        f'{saved / 1e9:.2f} GB are already saved. Free some space, pass a '
        '--checkpoint_dir on a larger disk, lower --replay_capacity, or pass '
        "--checkpoint_dir='' (no checkpoints: the run cannot resume).")


def _check_replay_fits_on_device(suite: Suite, s: Dict[str, Any]) -> None:
  """Raise ConfigError if the device reports too little memory for the replay."""
  stats = jax.devices()[0].memory_stats() or {}
  limit = stats.get('bytes_limit')
  if not limit:  # The CPU reports none.
    return
  frame_shape = tuple(suite.observation_shape(s))[:-1]
  needed = replay_lib.replay_bytes(s['replay_capacity'], frame_shape)
  if needed > 0.8 * limit:
    raise ConfigError(
        f'--replay_on_device: the replay needs {needed / 1e9:.1f} GB, more '
        f'than 80% of the {limit / 1e9:.1f} GB of {jax.devices()[0]}; lower '
        '--replay_capacity or drop --replay_on_device.')


def min_replay_size(s: Dict[str, Any]) -> int:
  return int(s['min_replay_capacity_fraction'] * s['replay_capacity'])


def epsilon_begin_frame(s: Dict[str, Any]) -> int:
  """Return the frame where ε starts to decay (the replay holds its minimum)."""
  return int(s['min_replay_capacity_fraction'] * s['replay_capacity'] *
             s['num_action_repeats'])


def epsilon_decay_frames(s: Dict[str, Any]) -> int:
  """Return the frames over which ε decays (DQN Zoo: a fraction of the run)."""
  return max(int(s['exploration_epsilon_decay_frame_fraction'] *
                 s['num_iterations'] * s['num_train_frames']), 1)


def checkpoint_config(suite: Suite, agent_name: str, s: Dict[str, Any]
                      ) -> Dict[str, Any]:
  """Return what a checkpoint must match to be resumed."""
  config = {k: v for k, v in s.items()
            if k not in _PATH_FLAGS + _DISPLAY_FLAGS}
  config['agent'] = agent_name
  config['suite'] = suite.name
  return config


def make_environment_factory(suite: Suite, s: Dict[str, Any]
                             ) -> Callable[[int, str],
                                           environment.BatchedEnvironment]:
  """Return fn(iteration, phase) -> a fresh, deterministically seeded env."""

  def make(iteration: int, phase: str) -> environment.BatchedEnvironment:
    return suite.make_environment(
        s, run_loop.environment_seed(s['seed'], iteration, phase))

  return make


def build_agent(suite: Suite, s: Dict[str, Any], num_actions: int,
                network_fn=None, stack_padding: str = 'trailing'):
  """Return (agent, replay) for resolved settings `s`."""
  if network_fn is None:
    network_fn = suite.network_fn(s, num_actions)
  observation_shape = tuple(suite.observation_shape(s))
  frame_shape = observation_shape[:-1]
  rng = np.random.RandomState(s['seed'])
  replay_class = (device_replay.DeviceFrameReplay if s['replay_on_device']
                  else replay_lib.FrameReplay)
  replay = replay_class(
      s['replay_capacity'], s['num_envs'], frame_shape,
      s['num_stacked_frames'], stack_padding=stack_padding,
      seed=int(rng.randint(2**31 - 1)))
  epsilon = agent_lib.LinearSchedule(
      begin_value=s['exploration_epsilon_begin_value'],
      end_value=s['exploration_epsilon_end_value'],
      begin_t=epsilon_begin_frame(s), decay_steps=epsilon_decay_frames(s))
  grad_scale = 2.0 / s['num_quantiles'] if s['scale_grad'] else 1.0
  config = agent_lib.AgentConfig(
      batch_size=s['batch_size'], min_replay_size=min_replay_size(s),
      learn_period=s['learn_period'],
      target_network_update_period=s['target_network_update_period'],
      num_action_repeats=s['num_action_repeats'],
      additional_discount=s['additional_discount'],
      max_abs_reward=s['max_abs_reward'], grad_scale=grad_scale,
      eval_exploration_epsilon=s['eval_exploration_epsilon'],
      num_fused_updates=s['num_fused_updates'])
  sample_observation = np.zeros(observation_shape, np.uint8)
  agent = agent_lib.QuantileAgent(
      network=hk.transform(network_fn),
      loss_fn=agent_lib.make_loss_fn(s['loss'], s['huber_param']),
      optimizer=agent_lib.make_optimizer(s['learning_rate'],
                                         s['optimizer_epsilon'],
                                         s['max_global_grad_norm']),
      replay=replay,
      sample_observation=sample_observation,
      exploration_epsilon=epsilon,
      config=config,
      rng_key=jax.random.PRNGKey(rng.randint(2**31 - 1)))
  return agent, replay


# Settings a finished or interrupted run may change when resumed, provided
# the iterations already run would not have run differently (check_resume).
EXTENDABLE = ('num_iterations', 'exploration_epsilon_decay_frame_fraction')


def _fraction_keeping(decay_frames: int, s: Dict[str, Any]) -> float:
  """Return the decay fraction giving `decay_frames` with s's other values."""
  frames = s['num_iterations'] * s['num_train_frames']
  fraction = decay_frames / frames
  while int(fraction * frames) < decay_frames:  # Float rounding.
    fraction = float(np.nextafter(fraction, 1.0))
  return fraction


def check_resume(s: Dict[str, Any], config: Dict[str, Any]
                 ) -> Optional[Dict[str, Any]]:
  """Return the meta of the checkpoint to resume (None: none); check it.

  A checkpoint resumes with equal settings, except that a longer run
  (--num_iterations) may continue a finished one when nothing already run
  would change: ε decays over exploration_epsilon_decay_frame_fraction x
  num_iterations x num_train_frames frames, so the decay must stay as long
  (or must not have begun yet).

  Raises:
    ConfigError: naming the differing settings, or why an extension would
      change what already ran and the flag value that keeps it.
  """
  try:  # The newest intact checkpoint, its run's own; no finished row lost.
    path, meta = run_directory.resume_point(s['checkpoint_dir'],
                                            s['results_csv_path'])
  except run_directory.Refused as e:
    raise ConfigError(str(e)) from e
  if path is None:
    return None
  saved = meta['config']
  differences = run_loop.config_differences(saved, config, EXTENDABLE,
                                            IMPLIED_SETTINGS)
  if differences:
    raise ConfigError(
        f'The checkpoint {path} was written by another agent or '
        'configuration: ' + '; '.join(differences) + '. Rerun with the same '
        'flags to resume, or use a new --checkpoint_dir.')
  if all(saved.get(name) == config.get(name) for name in EXTENDABLE):
    return meta
  done = meta['iteration'] - 1  # The last iteration run.
  if s['num_iterations'] < done:
    raise ConfigError(
        f'The checkpoint {path} holds iterations 0..{done}; '
        f'--num_iterations={s["num_iterations"]} is fewer. Pass '
        f'--num_iterations={saved["num_iterations"]} (or more, to extend).')
  frames_run = done * s['num_train_frames']
  old_decay = epsilon_decay_frames(saved)
  if (epsilon_decay_frames(s) != old_decay and
      frames_run > epsilon_begin_frame(s)):
    fraction = _fraction_keeping(old_decay, s)
    changes = ' and '.join(f'--{name} from {saved.get(name)} to {s[name]}'
                           for name in EXTENDABLE
                           if saved.get(name) != s[name])
    raise ConfigError(
        f'Changing {changes} would change the ε schedule of the '
        f'{frames_run} frames already run: ε decays over '
        'exploration_epsilon_decay_frame_fraction x num_iterations x '
        f'num_train_frames = {old_decay} frames in the checkpoint, '
        f'{epsilon_decay_frames(s)} now. To extend the run with the same '
        f'schedule, add --exploration_epsilon_decay_frame_fraction={fraction!r}'
        f' (same {old_decay} frames).')
  return meta


def _interrupted(signum: int, iteration: int, frame: int,
                 resume_iteration: Optional[int]) -> interrupts.Interrupted:
  """Return the exception whose message says where the run stopped."""
  name = interrupts.signal_name(signum)
  if resume_iteration is None:
    how = 'without --checkpoint_dir, a rerun starts over from iteration 0'
  else:
    how = ('rerun the same command to resume from iteration '
           f'{resume_iteration}')
  return interrupts.Interrupted(
      signum, f'Interrupted ({name}) at iteration {iteration}, frame {frame}; '
      f'{how}.')


class _InterruptCheck(run_loop.RunHooks):
  """Stop the run at a safe point once SIGINT or SIGTERM was recorded."""

  def __init__(self, checkpointing: bool):
    self._checkpointing = checkpointing
    self._agent = None
    self._iteration = 0
    self._resume = 0 if checkpointing else None

  def begin_run(self, start_iteration: int, agent, rows) -> None:
    self._agent, self._iteration = agent, start_iteration
    if self._checkpointing:
      self._resume = start_iteration
    self.on_step(0)

  def begin_iteration(self, iteration: int) -> None:
    self._iteration = iteration

  def on_step(self, frames: int) -> None:
    signum = interrupts.pending()
    if signum is not None:
      raise _interrupted(signum, self._iteration, self._agent.frame_t,
                         self._resume)

  def end_iteration(self, iteration: int, row: Dict[str, Any]) -> None:
    if self._checkpointing:
      self._resume = iteration + 1
    self.on_step(0)


def _check_set_up(meta: Optional[Dict[str, Any]], checkpointing: bool) -> None:
  """A safe point during set-up: raise Interrupted if a signal came."""
  signum = interrupts.pending()
  if signum is not None:
    iteration = meta['iteration'] if meta else 0
    frame = meta['rows'][-1]['frame'] if meta and meta['rows'] else 0
    raise _interrupted(signum, iteration, frame,
                       iteration if checkpointing else None)


def _finished(meta: Dict[str, Any], s: Dict[str, Any]) -> List[Dict[str, Any]]:
  """Say that the run is complete and where its results are; return rows."""
  rows = meta['rows'][:s['num_iterations'] + 1]
  where = s['results_csv_path']
  if where and not os.path.exists(where):
    results_csv.write_rows(where, rows)  # Deleted: rewrite it from the state.
  print(f'Run complete: iterations 0..{s["num_iterations"]} are in '
        f'{where or "the checkpoint (no --results_csv_path)"} (checkpoint '
        f'{checkpoint.latest(s["checkpoint_dir"])}); nothing to do. To train '
        'longer, raise --num_iterations (README, "Extending a finished run").',
        flush=True)
  return rows


def run(suite: Suite, agent_name: str, settings: Dict[str, Any],
        make_environment: Optional[Callable] = None, restart: bool = False):
  """Validate the settings, then train/evaluate (or resume); return rows.

  `restart`: move the run's files aside first (zoo.run_directory.restart).

  Raises:
    ConfigError: bad settings or checkpoint, before any long work.
    interrupts.Interrupted: a recorded SIGINT/SIGTERM (see zoo.interrupts),
      with a message saying where the run stopped and how to resume.
  """
  s = resolve_settings(suite, agent_name, settings)
  validate_settings(suite, s)
  config = checkpoint_config(suite, agent_name, s)
  if restart:
    run_directory.restart(s['results_csv_path'], s['checkpoint_dir'],
                          s['tensorboard_dir'])
    if s['checkpoint_dir']:
      _check_writable(s['checkpoint_dir'], 'checkpoints')
      check_checkpoint_disk(suite, s)
  meta = check_resume(s, config)
  checkpointing = bool(s['checkpoint_dir'])
  if meta is not None and meta['iteration'] > s['num_iterations']:
    return _finished(meta, s)
  _check_set_up(meta, checkpointing)
  if s['results_csv_path']:
    run_json.write(s['results_csv_path'], agent_name, suite.name, s)
  logging.info('%s on %s (%s); JAX device: %s', agent_name, suite.name,
               s['environment_name'], jax.devices()[0])
  if make_environment is None:
    make_environment = make_environment_factory(suite, s)
  probe = make_environment(0, 'eval')
  num_actions = probe.num_actions
  stack_padding = getattr(probe, 'stack_padding', 'trailing')
  probe.close()
  logging.info('Settings: %s', config)
  _check_set_up(meta, checkpointing)
  agent, replay = build_agent(suite, s, num_actions,
                              stack_padding=stack_padding)
  logging.info('Replay: %d transitions in %d streams, %.2f GB when full.',
               replay.capacity, replay.num_streams, replay.nbytes / 1e9)
  _check_set_up(meta, checkpointing)
  hooks = [progress.Progress(
      num_iterations=s['num_iterations'],
      num_train_frames=s['num_train_frames'],
      num_eval_frames=s['num_eval_frames'],
      interval_seconds=s['progress_interval_seconds'])]
  if s['tensorboard_dir']:
    hooks.append(tensorboard_writer.TensorBoardWriter(
        s['tensorboard_dir'], s['tensorboard_loss_period']))
  hooks.append(_InterruptCheck(checkpointing))
  game = s['environment_name']
  return run_loop.run_experiment(
      agent=agent, replay=replay, make_environment=make_environment,
      num_iterations=s['num_iterations'],
      num_train_frames=s['num_train_frames'],
      num_eval_frames=s['num_eval_frames'],
      num_action_repeats=s['num_action_repeats'],
      agent_name=agent_name, environment_name=suite.csv_prefix + game,
      seed=s['seed'],
      normalize=lambda score: suite.normalize(game, score),
      config=config,
      results_csv_path=s['results_csv_path'] or None,
      checkpoint_dir=s['checkpoint_dir'] or None,
      hooks=hooks, extendable=EXTENDABLE, implied_settings=IMPLIED_SETTINGS)


def suite_by_name(name: str) -> Suite:
  """Return the suite called `name` ('atari': zoo.run_atari.ATARI, ...)."""
  import importlib  # pylint: disable=g-import-not-at-top
  try:
    module = importlib.import_module(f'zoo.run_{name}')
  except ImportError as e:
    raise ConfigError(f'Unknown suite {name!r} (no module zoo.run_{name}).'
                      ) from e
  return getattr(module, name.upper())


def main(argv, suite: Suite, agent_name: str) -> None:
  """Entry point of `python -m <agent>.run_<suite>`.

  Exits with a one-line message: 1 on bad settings, 128 + the signal (130,
  143) on SIGINT/SIGTERM, which the entry points record from their start
  (zoo.interrupts).
  """
  if len(argv) > 1:
    sys.exit(f'Unexpected arguments: {argv[1:]}')
  try:
    run(suite, agent_name, settings_from_flags(), restart=FLAGS.restart)
  except (ConfigError, checkpoint.DamagedError, checkpoint.WriteError) as e:
    sys.exit(f'Error: {e}')
  except interrupts.Interrupted as e:
    print(e.message, file=sys.stderr, flush=True)
    sys.exit(e.exit_status)
