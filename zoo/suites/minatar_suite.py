"""The MinAtar suite: five small games after Young & Tian (2019).

Its defaults follow Young & Tian's DQN where the paper's agents do not differ.
"""

import functools
import math
from typing import Any, Dict

import networks
from zoo.environments import environment
from zoo.environments import minatar_env
from zoo.environments import minatar_jax_env
from zoo.configuration import settings as settings_lib
from zoo.configuration import suites
from zoo.replay import frame_replay
from zoo.replay import packed_replay

FLAG_DEFAULTS = {
    'environment_name': 'breakout',
    'environment_height': 10,
    'environment_width': 10,
    'num_stacked_frames': 1,                     # No frame stacking.
    'num_action_repeats': 1,                     # One frame per step.
    'replay_capacity': 100_000,
    'min_replay_capacity_fraction': 0.05,        # Learning from 5,000 steps.
    'exploration_epsilon_end_value': 0.1,
    # 0.02 x 50 x 100k = 100k steps of decay, from the learning start.
    'exploration_epsilon_decay_frame_fraction': 0.02,
    'target_network_update_period': 1000,
    'max_abs_reward': 10.0,      # MinAtar's largest reward: nothing clipped.
    'learning_rate': 1e-4,       # Adam (Obando-Ceron & Castro's MinAtar).
    'learn_period': 4,           # The paper's one update per 4 agent steps.
    'num_iterations': 50,
    'num_train_frames': 100_000,  # 50 x 100k = 5M steps.
    'num_eval_frames': 25_000,
    'hidden_size': 128,
    **settings_lib.default_paths(settings_lib.RUNS_ROOT + '/minatar'),
}
_FIXED = dict(environment_height=10, environment_width=10, num_stacked_frames=1,
              num_action_repeats=1)


def _resolve(s: Dict[str, Any]) -> Dict[str, Any]:
  if s['environment_mode'] == 'auto':
    s = dict(s, environment_mode='reference')
  return s


def _validate(s: settings_lib.Settings) -> None:
  try:
    minatar_env.check_installed()
  except minatar_env.NotInstalledError as e:
    raise settings_lib.ConfigError(str(e)) from None
  for name, value in _FIXED.items():
    if getattr(s, name) != value:
      raise settings_lib.ConfigError(
          f'--{name}={getattr(s, name)}: MinAtar frames are 10x10, neither '
          f'stacked nor repeated, so --{name} must be {value} (the default).')
  if s.torso != 'dqn':
    raise settings_lib.ConfigError(
        f'--torso={s.torso} is an Atari torso (84x84 frames); MinAtar runs '
        "Young & Tian's own torso: leave --torso unset.")
  if s.life_loss_ends_train_episode:
    raise settings_lib.ConfigError(
        '--life_loss_ends_train_episode: MinAtar games have no lives; leave '
        'it unset.')
  if s.environment_mode != 'reference':
    raise settings_lib.ConfigError(
        f'--environment_mode={s.environment_mode}: MinAtar streams are '
        'Python environments; use --environment_mode=reference (or auto).')
  if s.loop == 'jitted':
    try:  # Makes nothing: the jitted loop's environment compiles.
      minatar_jax_env.check_available(s.environment_name)
    except ValueError as e:
      raise settings_lib.ConfigError(f'--loop=jitted: {e}') from None


def _observation_shape(s: settings_lib.Settings):
  num_channels, _ = minatar_env.game_spec(s.environment_name)
  return (10, 10, num_channels, 1)


def _make_environment(s: settings_lib.Settings, seed: int,
                      training: bool = False
                      ) -> environment.BatchedEnvironment:
  del training  # Training and evaluation streams are alike.
  return minatar_env.MinAtarEnvironment(
      s.environment_name, seed, num_envs=s.num_envs,
      max_episode_frames=s.max_frames_per_episode)


def _jax_environment(s: settings_lib.Settings) -> minatar_jax_env.Streams:
  """Return the K JAX streams of s's game; ConfigError if refused."""
  try:
    env = minatar_jax_env.make_streams(
        s.environment_name, s.num_envs,
        max_episode_frames=s.max_frames_per_episode)
  except ValueError as e:  # A game the adapter refuses, with the reason.
    raise settings_lib.ConfigError(f'--loop=jitted: {e}') from e
  _, action_set = minatar_env.game_spec(s.environment_name)
  if env.num_actions != len(action_set):
    raise settings_lib.ConfigError(
        f'The JAX {s.environment_name} has {env.num_actions} actions, '
        f'minatar {len(action_set)}: the jitted loop refuses this game.')
  return env


MINATAR = suites.Suite(
    name='minatar',
    csv_prefix='minatar-',
    check_game=minatar_env.check_game,
    flag_defaults=FLAG_DEFAULTS,
    resolve=_resolve,
    validate=_validate,
    observation_shape=_observation_shape,
    make_environment=_make_environment,
    network_fn=functools.partial(
        suites.quantile_network_fn, torso=networks.minatar_torso,
        quantile_network=networks.minatar_quantile_network),
    normalize=lambda game, score: math.nan,  # No reference scores.
    render=lambda env: env.rgb_frames(scale=16),  # A 10x10 grid is too small.
    jax_environment=_jax_environment,
    jax_replay=lambda env, n_step=frame_replay.ONE_STEP:
    packed_replay.jax_replay(env.observation_shape[:-1], n_step),
    jax_vmaps_seeds=minatar_jax_env.Streams.vmaps,
    loops=('python', 'jitted'),
)

