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


class Suite(NamedTuple):
  """What differs between families of games; everything else is shared.

  Attributes:
    name: 'atari' or 'minatar' (log lines, saved settings, default paths).
    csv_prefix: before the game in the CSV's environment_name ('minatar-').
    check_game: fn(name) -> name; ValueError listing the games.
    flag_defaults: flag values that differ from the Atari defaults.
    resolve: fn(values dict) -> values, filling suite-specific 'auto' values.
    validate: fn(settings); ConfigError for suite-specific limits.
    observation_shape: fn(settings) -> (*frame_shape, num_stacked_frames).
    make_environment: fn(settings, seed) -> a fresh BatchedEnvironment.
    network_fn: fn(settings, num_actions) -> Haiku fn(observations).
    normalize: fn(game, score) -> normalised score (NaN: no reference).
    render: fn(reference-mode environment) -> [K, H, W, 3] uint8 screens;
      None: cannot render.
    jax_environment: fn(settings) -> a fresh K-stream JAX environment for
      the jitted loop (ConfigError for a game it cannot run); None: none.
    jax_replay: fn(JAX environment) -> the zoo.replay.device_replay.JaxReplay
      of its observations.
    jax_vmaps_seeds: whether the jitted loop vmaps a group's seeds (the
      environment's `vmaps`); False: one seed per group.
    loops: the --loop names that run the suite.
  """
  name: str
  csv_prefix: str
  check_game: Callable[[str], str]
  flag_defaults: Mapping[str, Any]
  resolve: Callable[[Dict[str, Any]], Dict[str, Any]]
  validate: Callable[[settings_lib.Settings], None]
  observation_shape: Callable[[settings_lib.Settings], Tuple[int, ...]]
  make_environment: Callable[[settings_lib.Settings, int],
                             environment.BatchedEnvironment]
  network_fn: Callable[[settings_lib.Settings, int], Callable]
  normalize: Callable[[str, float], float]
  render: Optional[Callable[[environment.BatchedEnvironment],
                            np.ndarray]] = None
  jax_environment: Optional[Callable[[settings_lib.Settings], Any]] = None
  jax_replay: Optional[Callable[[Any], Any]] = None
  jax_vmaps_seeds: bool = True
  loops: Tuple[str, ...] = ('python',)


def quantile_network_fn(s: settings_lib.Settings, num_actions: int, *,
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
  """Return the suite called `name` ('atari': zoo.suites.atari_suite.ATARI, ...)."""
  try:
    module = importlib.import_module(f'zoo.suites.{name}_suite')
  except ImportError as e:
    raise settings_lib.ConfigError(
        f'Unknown suite {name!r} (no module zoo.suites.{name}_suite).') from e
  return getattr(module, name.upper())
