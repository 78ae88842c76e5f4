"""The Atari suite: DQN Zoo's 57 games, protocol, defaults and network."""

import functools
from typing import Any, Dict

import numpy as np

import networks
from zoo.configuration import settings as settings_lib
from zoo.configuration import suites
from zoo.environments import atari_data
from zoo.environments import atari_env
from zoo.environments import atari_jax_env
from zoo.environments import environment
from zoo.loops import phase_accounting
from zoo.replay import atari_device_replay
from zoo.replay import frame_replay

_VECTOR_ONLY = dict(num_action_repeats=4, num_stacked_frames=4,
                    environment_height=84, environment_width=84)


def _resolve(s: Dict[str, Any]) -> Dict[str, Any]:
  """Resolve --environment_mode=auto: reference under DQN Zoo's protocol."""
  if s['environment_mode'] == 'auto':
    vector = (not phase_accounting.is_dqn_zoo(s['num_envs']) or
              s['loop'] == 'jitted')
    s = dict(s, environment_mode='vector' if vector else 'reference')
  return s


def _validate(s: settings_lib.Settings) -> None:
  if s.loop == 'jitted' and s.environment_mode != 'vector':
    raise settings_lib.ConfigError(
        f'--loop=jitted --environment_mode={s.environment_mode}: the jitted '
        'loop steps the vector environment; use --environment_mode=vector '
        '(or auto).')
  if s.life_loss_ends_train_episode and s.environment_mode != 'reference':
    raise settings_lib.ConfigError(
        '--life_loss_ends_train_episode runs in reference mode only (the '
        'Python loop at --num_envs=1, or --environment_mode=reference); got '
        f'--environment_mode={s.environment_mode} (--loop={s.loop}, '
        f'--num_envs={s.num_envs}).')
  if s.environment_mode == 'vector':
    for name, value in _VECTOR_ONLY.items():
      if getattr(s, name) != value:
        raise settings_lib.ConfigError(
            f'--{name}={getattr(s, name)} is not supported in vector mode '
            f'(only {value}); use --environment_mode=reference.')


def _make_environment(s: settings_lib.Settings, seed: int,
                      training: bool = False
                      ) -> environment.BatchedEnvironment:
  """Return the streams; a life lost ends an episode in training only."""
  reference = s.environment_mode == 'reference'
  return atari_env.make_atari_environment(
      s.environment_name, seed, num_envs=s.num_envs, mode=s.environment_mode,
      max_episode_frames=s.max_frames_per_episode,
      **(dict(num_action_repeats=s.num_action_repeats,
              num_stacked_frames=s.num_stacked_frames,
              height=s.environment_height, width=s.environment_width,
              life_loss_ends_episode=(
                  training and s.life_loss_ends_train_episode))
         if reference else {}))


def _network_fn(s: settings_lib.Settings, num_actions: int):
  """Return the Haiku network fn of `s`, with the torso --torso names."""
  return suites.quantile_network_fn(
      s, num_actions, torso=networks.ATARI_TORSOS[s.torso],
      quantile_network=functools.partial(networks.atari_quantile_network,
                                         torso=s.torso))


def _jax_environment(s: settings_lib.Settings
                     ) -> atari_jax_env.AtariJaxEnvironment:
  """Return K fresh XLA streams of vector mode."""
  return atari_jax_env.make(s.environment_name, seed=0, num_envs=s.num_envs,
                            max_episode_frames=s.max_frames_per_episode)


ATARI = suites.Suite(
    name='atari',
    csv_prefix='',
    check_game=atari_data.check_game,
    flag_defaults={},
    resolve=_resolve,
    validate=_validate,
    observation_shape=lambda s: (s.environment_height, s.environment_width,
                                 s.num_stacked_frames),
    make_environment=_make_environment,
    network_fn=_network_fn,
    normalize=atari_data.human_normalized_score,
    # The streams' current RGB screens [K, 210, 160, 3].
    render=lambda env: np.stack([e.ale.getScreenRGB()
                                 for e in env.environments]),
    jax_environment=_jax_environment,
    jax_replay=lambda env, n_step=frame_replay.ONE_STEP:
    atari_device_replay.jax_replay(n_step),
    jax_vmaps_seeds=atari_jax_env.AtariJaxEnvironment.vmaps,
    loops=('python', 'jitted'),
)

