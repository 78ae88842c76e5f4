"""A run's settings: one frozen record whose fields declare the flags.

No flags are defined here (settings_flags does), so that tools with their own
flags can import it.
"""

import dataclasses
import os
from typing import Any, Dict, Mapping, Optional

from zoo.agent import catalog
from zoo.configuration import agent_registry as agents_lib
from zoo.configuration import protocols as protocols_lib

# The run directory: {root}/{RUN_DIR}/ holds RESULTS_FILE, run.json,
# CHECKPOINT_DIR and TENSORBOARD_DIR.
RUNS_ROOT = 'runs'
RUN_DIR = '{agent}/{environment_name}/seed_{seed}'
RESULTS_FILE = 'results.csv'
CHECKPOINT_DIR = 'checkpoints'
TENSORBOARD_DIR = 'tensorboard'
# --loop=NAME runs zoo.loops.<NAME>_loop, where the suite lists NAME.
LOOPS = ('python', 'jitted')


def run_dir(root: str, agent: str, environment_name: str, seed: int) -> str:
  """Return the directory of one run under `root`."""
  return os.path.join(root, RUN_DIR.format(
      agent=agent, environment_name=environment_name, seed=seed))


def default_paths(root: str) -> Dict[str, str]:
  """Return the path settings of runs kept under `root` (placeholders kept)."""
  return {'results_csv_path': f'{root}/{RUN_DIR}/{RESULTS_FILE}',
          'checkpoint_dir': '{results_dir}/' + CHECKPOINT_DIR}


class ConfigError(ValueError):
  """A bad setting, reported before any long work."""


_KINDS = {bool: 'bool', int: 'integer', float: 'float', str: 'string'}


def _flag(default, help_text: str, kind: Optional[str] = None, **options):
  """Return a field that is a flag too (settings_flags' DEFINE_<kind>)."""
  if kind is None:
    kind = 'enum' if 'enum_values' in options else _KINDS[type(default)]
  return dataclasses.field(default=default, metadata=dict(
      help=help_text, kind=kind, options=options))


_PATHS = default_paths(RUNS_ROOT)


@dataclasses.dataclass(frozen=True)
@catalog.add_fields(lambda h: (Optional[float], _flag(
    None, f"{h.help}; unset: the preset's.", 'float')), after='loss')
class Settings:
  """Every setting of a run. None: unset (only before resolve_settings)."""
  environment_name: str = _flag('pong', 'Game of the suite.')
  protocol: str = _flag(
      'dqn_zoo', 'Values for every flag left unset: dqn_zoo (the '
      "defaults) or atari100k (Atari; DER.gin's: docs/atari100k.md).",
      enum_values=list(protocols_lib.PROTOCOLS))
  environment_height: int = _flag(84, 'Processed frame height.')
  environment_width: int = _flag(84, 'Processed frame width.')
  replay_capacity: int = _flag(int(1e6), 'Transitions (all streams).', 'count')
  min_replay_capacity_fraction: float = _flag(
      0.05, 'Learning starts once the replay holds this fraction.')
  batch_size: int = _flag(32, 'Transitions per update.')
  max_frames_per_episode: int = _flag(108000, 'Episode frame cap.', 'count')
  life_loss_ends_train_episode: bool = _flag(
      False, 'Atari training: a life lost ends the episode; the game goes on '
      "(Dopamine's terminal_on_life_loss; docs/atari100k.md). Reference mode.")
  num_action_repeats: int = _flag(4, 'Frames per agent step.')
  num_stacked_frames: int = _flag(4, 'Frames per observation.')
  exploration_epsilon_begin_value: float = _flag(1.0, 'Initial ε.')
  exploration_epsilon_end_value: float = _flag(0.01, 'Final ε.')
  exploration_epsilon_decay_frame_fraction: float = _flag(
      0.02, 'ε decays over this fraction of all training frames.')
  eval_exploration_epsilon: float = _flag(0.001, 'ε when evaluating.')
  target_network_update_period: int = _flag(
      int(4e4), 'Frames between target network copies.', 'count')
  learning_rate: float = _flag(5e-5, 'Adam learning rate.')
  optimizer_epsilon: Optional[float] = _flag(
      None, "Adam's ε; unset: 0.01/32, times 2/N for the Cramér losses or "
      'with --scale_grad (N: --num_quantiles, or --tau_samples_s_tm1 with '
      'the IQN head).', 'float')
  additional_discount: float = _flag(0.99, 'γ applied to env discounts.')
  n_steps: int = _flag(
      1, 'Rewards summed in each TD target (n-step return). 1: DQN Zoo.')
  max_abs_reward: float = _flag(1.0, 'Rewards clipped to ± this.')
  max_global_grad_norm: float = _flag(
      10.0, 'Gradient clipping norm (<= 0: no clipping).')
  num_iterations: int = _flag(200, 'Training iterations.')
  num_train_frames: int = _flag(int(1e6), 'Frames per iteration.', 'count')
  num_eval_frames: int = _flag(int(5e5), 'Eval frames per iteration.', 'count')
  num_eval_episodes: int = _flag(
      0, 'Whole episodes evaluated per iteration (0: --num_eval_frames). '
      'Python loop.')
  num_final_eval_episodes: int = _flag(
      0, "Whole episodes of the last iteration's evaluation (0: as the "
      'others). Python loop.')
  learn_period: int = _flag(16, 'Frames between updates.', 'count')
  num_quantiles: int = _flag(201, 'Atoms N per action (fixed-level heads).')
  # The IQN head's levels, sampled uniformly per state and per use (DQN
  # Zoo's names and defaults).
  tau_samples_policy: int = _flag(
      64, 'IQN head: levels sampled per state to act and to pick the TD '
      "target's greedy action.")
  tau_samples_s_tm1: int = _flag(
      64, 'IQN head: levels sampled per state for the online atoms that the '
      'loss trains (N).')
  tau_samples_s_t: int = _flag(
      64, "IQN head: levels sampled per next state for the TD target's atoms.")
  tau_latent_dim: int = _flag(64, 'IQN head: cosine features per level.')
  seed: int = _flag(1, 'Run seed (environments, network, replay).')
  results_csv_path: str = _flag(
      _PATHS['results_csv_path'], 'Run CSV (one row per iteration); '
      '{agent}, {environment_name} and {seed} are filled in; empty: none.')
  checkpoint_dir: str = _flag(
      _PATHS['checkpoint_dir'], 'Checkpoint directory, resumed from when it '
      "holds one; {results_dir} is the results CSV's directory (and the "
      'placeholders of --results_csv_path); empty: none.')
  head: Optional[str] = _flag(None, "Network head; unset: the preset's.",
                              enum_values=list(catalog.HEADS))
  loss: Optional[str] = _flag(None, "Loss; unset: the preset's.",
                              enum_values=list(catalog.LOSSES))
  # Here, one float flag per loss hyperparameter (catalog.add_fields).
  scale_grad: Optional[bool] = _flag(
      None, "Multiply the gradient by 2/N; unset: the preset's.", 'bool')
  nc_scale_activation: str = _flag(
      'relu', 'NC head: activation of the scale α.',
      enum_values=['relu', 'softplus'])
  num_hidden_layers: int = _flag(1, 'Head hidden layers λ.')
  hidden_size: int = _flag(512, 'Head hidden units η.')
  torso: str = _flag(
      'dqn', "Atari torso: DQN's (Nature) or DER's (data-efficient "
      'Rainbow).', enum_values=['dqn', 'der'])
  num_envs: int = _flag(
      1, 'Environment streams K acting in lockstep; counts are frames and '
      'transitions summed over the streams. 1: DQN Zoo exactly.')
  environment_mode: str = _flag(
      'auto', "Atari: streams as Python envs ('reference') or ale_py's "
      "AtariVectorEnv ('vector'); auto: vector when num_envs > 1 or "
      "--loop=jitted. MinAtar: reference only.",
      enum_values=['auto', 'reference', 'vector'])
  tensorboard_dir: str = _flag(
      '{results_dir}/' + TENSORBOARD_DIR, 'TensorBoard event files: '
      'per-iteration scalars and the training loss; {results_dir} is the '
      "results CSV's directory (and the placeholders of --results_csv_path); "
      'empty: none.')
  tensorboard_loss_period: int = _flag(
      8000, 'Frames between training-loss scalars.', 'count')
  progress_interval_seconds: float = _flag(
      30.0, 'Seconds between progress lines within a phase (<= 0: none).')
  num_fused_updates: int = _flag(
      1, 'U: updates that fall due run U at a time in one jitted dispatch '
      '(acting lags by at most U - 1 updates). 1: DQN Zoo.')
  replay_on_device: bool = _flag(
      False, 'Mirror the replay on the JAX device, where the update samples '
      "its batches. Doubles the replay's memory (the host copy is kept for "
      'checkpoints).')
  overlap_learning: bool = _flag(
      False, 'Python loop: the emulators step the next block while the '
      "updates run, acting on the parameters of before the block's updates "
      '(two devices; docs/performance.md). Off: DQN Zoo.')
  loop: str = _flag(
      'python', 'The iteration loop (zoo.loops.<loop>_loop). python: one seed '
      'per process, any suite; jitted: acting, stepping and learning compiled '
      'in JAX, where the suite has a JAX environment (MinAtar: the --seeds '
      'vmapped in one process; Atari: one seed, ale-py\'s XLA emulators; '
      'docs/jitted-loop.md).', enum_values=list(LOOPS))
  # Not flags: set by the entry point.
  agent: str = ''        # The agent package ('cr_dqn'): CSV and run.json.
  suite: str = 'atari'   # The suite's name (suites.suite_by_name).

  def as_dict(self) -> Dict[str, Any]:
    """Return the settings as run.json stores them."""
    return dataclasses.asdict(self)

  def checkpoint_config(self) -> Dict[str, Any]:
    """Return what a checkpoint must match to be resumed."""
    return {k: v for k, v in self.as_dict().items()
            if k not in PATH_FLAGS + DISPLAY_FLAGS}

  @classmethod
  def from_dict(cls, values: Mapping[str, Any]) -> 'Settings':
    """Return settings from a stored dict; absent keys take the defaults."""
    unknown = set(values) - set(FIELDS)
    if unknown:
      raise ConfigError(f'Unknown settings {sorted(unknown)}.')
    return cls(**values)

  def num_atoms(self) -> int:
    """Return N, the source atoms per action that the loss trains."""
    return num_atoms(self.as_dict())

  def min_replay_size(self) -> int:
    return int(self.min_replay_capacity_fraction * self.replay_capacity)

  def epsilon_begin_frame(self) -> int:
    """Return the frame where ε starts to decay (the replay at its minimum)."""
    return int(self.min_replay_capacity_fraction * self.replay_capacity *
               self.num_action_repeats)

  def epsilon_decay_frames(self) -> int:
    """Return the frames over which ε decays (a fraction of the run)."""
    return max(int(self.exploration_epsilon_decay_frame_fraction *
                   self.num_iterations * self.num_train_frames), 1)

  def eval_episodes(self, iteration: int) -> int:
    """Return the whole episodes iteration's evaluation runs (0: budget).

    --num_final_eval_episodes at the last iteration (after all of training,
    where Dopamine's atari_100k runner measures the published scores), else
    --num_eval_episodes.
    """
    if iteration == self.num_iterations and self.num_final_eval_episodes:
      return self.num_final_eval_episodes
    return self.num_eval_episodes


FIELDS = tuple(f.name for f in dataclasses.fields(Settings))
# The settings that are flags, in order.
SETTINGS = tuple(f.name for f in dataclasses.fields(Settings) if f.metadata)
# Settings that name where a run writes, not what it computes.
PATH_FLAGS = ('results_csv_path', 'checkpoint_dir', 'tensorboard_dir')
# Settings that change what a run shows, not what it computes.
DISPLAY_FLAGS = ('tensorboard_loss_period', 'progress_interval_seconds')


def num_atoms(values: Mapping[str, Any]) -> int:
  """Return N of resolved settings `values` (by name), as 2/N divides by."""
  if catalog.HEADS[values['head']].sampled_levels:
    return values['tau_samples_s_tm1']
  return values['num_quantiles']


def default_settings(suite) -> Dict[str, Any]:
  """Return the suite's defaults of every flag (as its entry point has)."""
  return {**{f.name: f.default for f in dataclasses.fields(Settings)
             if f.metadata}, **suite.flag_defaults}


def resolve_settings(suite, preset, values: Mapping[str, Any]) -> Settings:
  """Return the settings of a run of `preset` on `suite`.

  values: the flag values given (absent: the protocol's, else the suite's
  defaults; None: the preset's).
  """
  name = values.get('protocol', default_settings(suite)['protocol'])
  if name not in protocols_lib.PROTOCOLS:
    raise ConfigError(f'--protocol={name}: choose one of '
                      + ', '.join(protocols_lib.PROTOCOLS) + '.')
  protocol = protocols_lib.PROTOCOLS[name]
  s = {**default_settings(suite), **protocol.values, **values}
  fields = dict(agent=preset.package, environment_name=s['environment_name'],
                seed=s['seed'], suite=suite.name, results_dir='')
  for name in PATH_FLAGS:  # results_csv_path first: it gives results_dir.
    value = s.get(name) or ''
    if '{results_dir}' in value and not fields['results_dir']:
      value = ''  # Next to a CSV that is not written: nowhere.
    s[name] = value.format(**fields)
    if name == 'results_csv_path' and s[name]:
      fields['results_dir'] = os.path.dirname(s[name]) or '.'
  for name in ('head', 'loss', 'scale_grad') + tuple(
      h.name for h in catalog.hyperparameters()):
    if s[name] is None:
      s[name] = getattr(preset, name)
  if (s['optimizer_epsilon'] is None and s['head'] in catalog.HEADS
      and num_atoms(s) > 0):
    s['optimizer_epsilon'] = agents_lib.default_optimizer_epsilon(
        s['loss'], num_atoms(s), s['scale_grad'],
        protocol.base_optimizer_epsilon)
  s = suite.resolve(s)
  return Settings(**s, agent=preset.package, suite=suite.name)


_POSITIVE = (
    'environment_height', 'environment_width', 'replay_capacity',
    'batch_size', 'max_frames_per_episode', 'num_action_repeats',
    'num_stacked_frames', 'target_network_update_period', 'num_train_frames',
    'num_eval_frames', 'learn_period', 'num_quantiles', 'tau_samples_policy',
    'tau_samples_s_tm1', 'tau_samples_s_t', 'tau_latent_dim',
    'num_hidden_layers', 'hidden_size', 'num_envs', 'num_fused_updates',
    'learning_rate', 'optimizer_epsilon', 'max_abs_reward')
# The counts of at least one (the fix: 1, the default).
_AT_LEAST_ONE = ('n_steps',)
# The ranges checked first, in order: (settings, out of range, the error).
_RANGES = (
    (_POSITIVE, lambda v: v <= 0, 'must be positive'),
    (_AT_LEAST_ONE, lambda v: v < 1, 'must be >= 1 (1: one-step returns)'),
    (('num_iterations', 'exploration_epsilon_decay_frame_fraction',
      'num_eval_episodes', 'num_final_eval_episodes'),
     lambda v: v < 0, 'must be >= 0'),
    (('min_replay_capacity_fraction',), lambda v: not 0 < v <= 1,
     'must lie in (0, 1]'),
    (('exploration_epsilon_begin_value', 'exploration_epsilon_end_value',
      'eval_exploration_epsilon', 'additional_discount'),
     lambda v: not 0 <= v <= 1, 'must lie in [0, 1]'))


def validate_settings(suite, s: Settings) -> None:
  """Raise ConfigError naming the first bad setting and its fix."""
  try:
    suite.check_game(s.environment_name)
  except ValueError as e:
    raise ConfigError(str(e)) from e
  runs_on = protocols_lib.PROTOCOLS[s.protocol].suites
  if runs_on is not None and suite.name not in runs_on:
    raise ConfigError(
        f'--protocol={s.protocol} runs on the {"/".join(runs_on)} suite, not '
        f'{suite.name}; leave --protocol unset.')
  for names, out_of_range, must in _RANGES:
    for name in names:
      if out_of_range(getattr(s, name)):
        raise ConfigError(f'--{name} {must}, got {getattr(s, name)}.')
  problem = (catalog.head_loss_problem(s.head, s.loss)
             or catalog.hyperparameter_problem(s.loss, catalog.values(s)))
  if problem:
    raise ConfigError(problem)
  fewest = catalog.loss(s.loss).min_source_atoms
  if s.num_atoms() < fewest:
    flag = ('tau_samples_s_tm1' if catalog.HEADS[s.head].sampled_levels
            else 'num_quantiles')
    raise ConfigError(f'--loss={s.loss} needs --{flag} >= {fewest}, got '
                      f'{s.num_atoms()}.')
  if s.batch_size > s.min_replay_size():
    raise ConfigError(
        f'--batch_size={s.batch_size} exceeds the minimum replay size '
        f'{s.min_replay_size()} (= min_replay_capacity_fraction * '
        'replay_capacity); raise the replay or lower the batch.')
  if s.replay_capacity // s.num_envs < s.num_stacked_frames + s.n_steps:
    raise ConfigError('--replay_capacity must hold at least '
                      f'{s.num_stacked_frames + s.n_steps} steps per stream '
                      '(--num_stacked_frames + --n_steps).')
  if s.loop not in suite.loops:
    raise ConfigError(
        f'--loop={s.loop}: the {suite.name} suite runs with --loop='
        + '|'.join(suite.loops) + '.')
  suite.validate(s)
