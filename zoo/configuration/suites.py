"""Suites: what differs between families of games (Atari, MinAtar).

`zoo/suites/<name>_suite.py` defines its `Suite` as `<NAME>`; `suite_by_name`
finds it from a saved setting.
"""

import importlib
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

import numpy as np

import networks
from zoo.agent import catalog
from zoo.configuration import settings as settings_lib
from zoo.environments import environment

_Settings = settings_lib.Settings


class Suite(NamedTuple):
  """What differs between families of games; everything else is shared."""
  name: str  # 'atari' or 'minatar': log lines, saved settings, default paths.
  csv_prefix: str  # Before the game in the CSV's environment_name.
  check_game: Callable[[str], str]  # ValueError listing the games.
  flag_defaults: Mapping[str, Any]  # Flag values other than Atari's.
  # fn(values dict) -> values, with the suite's 'auto' values filled in.
  resolve: Callable[[Dict[str, Any]], Dict[str, Any]]
  validate: Callable[[_Settings], None]  # ConfigError for the suite's limits.
  # fn(settings) -> (*frame_shape, num_stacked_frames).
  observation_shape: Callable[[_Settings], Tuple[int, ...]]
  # fn(settings, seed, training=False) -> a fresh BatchedEnvironment
  # (training: for a training phase, where it differs).
  make_environment: Callable[..., environment.BatchedEnvironment]
  # fn(settings, num_actions) -> Haiku fn(observations).
  network_fn: Callable[[_Settings, int], Callable]
  normalize: Callable[[str, float], float]  # (game, score); NaN: no reference.
  # fn(reference-mode environment) -> [K, H, W, 3] uint8; None: cannot render.
  render: Optional[Callable[[environment.BatchedEnvironment],
                            np.ndarray]] = None
  # fn(settings) -> a fresh K-stream JAX environment for the jitted loop
  # (ConfigError for a game it cannot run); None: none.
  jax_environment: Optional[Callable[[_Settings], Any]] = None
  # fn(JAX environment, n_step=one step) -> the device_replay.JaxReplay of
  # its observations, sampling returns of frame_replay.NStep `n_step`.
  jax_replay: Optional[Callable[..., Any]] = None
  # Whether the jitted loop vmaps a group's seeds (the environment's `vmaps`).
  jax_vmaps_seeds: bool = True
  loops: Tuple[str, ...] = ('python',)  # The --loop names that run it.


def quantile_network_fn(s: _Settings, num_actions: int, *,
                        torso: Callable, quantile_network: Callable):
  """Return the suite's Haiku network fn for settings `s` (IQN or quantile)."""
  if catalog.HEADS[s.head].sampled_levels:  # fn(observations, levels).
    return networks.iqn_network(
        torso(), num_actions, num_cosines=s.tau_latent_dim,
        hidden_sizes=(s.hidden_size,) * s.num_hidden_layers)
  return quantile_network(
      num_actions, s.num_quantiles, head=s.head,
      num_layers=s.num_hidden_layers, hidden_size=s.hidden_size,
      nc_scale_activation=s.nc_scale_activation)


def suite_by_name(name: str) -> Suite:
  """Return the suite called `name` ('atari': zoo.suites.atari_suite.ATARI)."""
  try:
    module = importlib.import_module(f'zoo.suites.{name}_suite')
  except ImportError as e:
    raise settings_lib.ConfigError(
        f'Unknown suite {name!r} (no module zoo.suites.{name}_suite).') from e
  return getattr(module, name.upper())
