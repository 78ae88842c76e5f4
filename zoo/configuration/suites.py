"""Suites: what differs between families of games (Atari, MinAtar).

A suite module `zoo/suites/<name>_suite.py` defines its `Suite` as `<NAME>`
(zoo.suites.atari_suite.ATARI, zoo.suites.minatar_suite.MINATAR); `suite_by_name` finds it
from a saved setting.
"""

import importlib
from typing import Any, Callable, Dict, Mapping, NamedTuple, Optional, Tuple

import numpy as np

from zoo.configuration import settings as settings_lib
from zoo.environments import environment


class Suite(NamedTuple):
  """What differs between families of games; everything else is shared.

  Attributes:
    name: 'atari' or 'minatar' (log lines, saved settings, default paths).
    csv_prefix: put before the game in the CSV's environment_name column,
      so that games of two suites with one name never mix ('' for Atari,
      whose runs compare with the published ones; 'minatar-' for MinAtar).
    check_game: fn(name) -> name; raises a ValueError listing the games.
    flag_defaults: flag values that differ from the Atari defaults
      (zoo.configuration.settings.Settings).
    resolve: fn(values) -> values, filling suite-specific 'auto' flag values
      (a dict, before the settings are built).
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
      environment_mode='reference' (videos of scripts.analysis.evaluate); None where
      the suite cannot render.
    jax_environment: fn(settings) -> the game's JAX environment (pure
      reset(key) and step(state, action, key), one stream each; the jitted
      loop's), raising ConfigError for a game it cannot run; None: the
      suite has none.
    loops: the --loop names (zoo.configuration.settings.LOOPS) that run the
      suite.
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
  loops: Tuple[str, ...] = ('python',)


def suite_by_name(name: str) -> Suite:
  """Return the suite called `name` ('atari': zoo.suites.atari_suite.ATARI, ...)."""
  try:
    module = importlib.import_module(f'zoo.suites.{name}_suite')
  except ImportError as e:
    raise settings_lib.ConfigError(
        f'Unknown suite {name!r} (no module zoo.suites.{name}_suite).') from e
  return getattr(module, name.upper())
