"""The agents: named presets (head, loss, hyperparameters, 2/N scale).

An agent package is a top-level package whose agent.py defines `PRESETS` and
`DEFAULT_PRESET`; what needs every agent calls `presets()`.
"""

import dataclasses
import importlib
import os
import pkgutil
from typing import Dict, Iterable, Optional, Sequence, Tuple

from zoo.agent import catalog

BASE_OPTIMIZER_EPSILON = 0.01 / 32


@dataclasses.dataclass(frozen=True)
@catalog.add_fields(lambda h: (float, h.default))
class AgentPreset:
  """One named agent: what its package runs with --preset=NAME."""
  name: str           # The paper's name: 'CR-DQN', 'QR-DQN-1', ...
  package: str        # The package whose entry points run it: 'cr_dqn'.
  head: str           # A name of zoo.agent.catalog.HEADS.
  loss: str           # A name of zoo.agent.catalog.LOSSES.
  scale_grad: bool    # Gradient × 2/N.
  summary: str        # One line for the agents table and --help.
  # Then one per loss hyperparameter, defaulted: huber_param (QR's κ), ...

  def __post_init__(self):
    try:
      catalog.check_head(self.head)
      problem = (catalog.head_loss_problem(self.head, self.loss, prefix='')
                 or catalog.hyperparameter_problem(
                     self.loss, catalog.values(self), prefix=''))
    except ValueError as e:
      problem = str(e)
    if problem:
      raise ValueError(f'Preset {self.name}: {problem}')


def default_optimizer_epsilon(loss: str, num_quantiles: int,
                              scale_grad: bool,
                              base: float = BASE_OPTIMIZER_EPSILON) -> float:
  """Return Adam's ε: `base`, × 2/N with scale_grad or a 2/N-gradient loss.

  num_quantiles: N, the source atoms that the loss trains; base: DQN Zoo's
  0.01/32, or a protocol's (zoo.configuration.protocols).
  """
  if scale_grad or catalog.loss(loss).gradient_2_over_n:
    return base * 2 / num_quantiles
  return base


def check_package(package: str, package_presets: Sequence[AgentPreset],
                  default: str) -> Tuple[AgentPreset, ...]:
  """Return a package's presets; raise ValueError if they are inconsistent."""
  package_presets = tuple(package_presets)
  names = [p.name for p in package_presets]
  if not package_presets:
    raise ValueError(f'{package}.agent: PRESETS is empty.')
  if len(set(names)) != len(names):
    raise ValueError(f'{package}.agent: duplicate preset names in {names}.')
  for preset in package_presets:
    if preset.package != package:
      raise ValueError(f'{package}.agent: preset {preset.name} names package '
                       f'{preset.package!r}; it must be {package!r}.')
  if default not in names:
    raise ValueError(f'{package}.agent: DEFAULT_PRESET {default!r} is not '
                     f'one of its presets {names}.')
  return package_presets


def pick(package_presets: Sequence[AgentPreset], default: str,
         name: Optional[str]) -> AgentPreset:
  """Return the preset called `name` (None: `default`); ValueError if none."""
  by_name = {p.name: p for p in package_presets}
  name = default if name is None else name
  if name not in by_name:
    raise ValueError(f'Unknown preset {name!r}; this agent runs '
                     f'{", ".join(by_name)} (--preset=NAME).')
  return by_name[name]


def preset_of(package: str, settings: Dict) -> Optional[str]:
  """Return the name of `package`'s preset that `settings` ran, else None.

  settings: a run's settings (run.json's); a preset matches when its head,
  loss, scale_grad and loss hyperparameters all equal the run's.
  """
  try:
    candidates = package_presets(package)
  except (ImportError, ValueError):  # Not an agent package of this install.
    return None
  ignored = ('name', 'package', 'summary')
  for preset in candidates:
    if all(settings.get(field.name) == getattr(preset, field.name)
           for field in dataclasses.fields(preset)
           if field.name not in ignored):
      return preset.name
  return None


def agent_packages(paths: Optional[Iterable[str]] = None) -> Tuple[str, ...]:
  """Return the packages with an agent.py in `paths` (None: the project's)."""
  if paths is None:
    paths = [os.path.dirname(os.path.dirname(os.path.dirname(
        os.path.abspath(__file__))))]
  modules = pkgutil.iter_modules([p for p in paths if os.path.isdir(p)])
  return tuple(sorted({m.name for m in modules if m.ispkg and os.path.isfile(
      os.path.join(m.module_finder.path, m.name, 'agent.py'))}))


def _load(package: str) -> Tuple[Tuple[AgentPreset, ...], str]:
  module = importlib.import_module(f'{package}.agent')
  try:
    package_presets, default = module.PRESETS, module.DEFAULT_PRESET
  except AttributeError as e:
    raise ValueError(f'{package}.agent must define PRESETS and '
                     f'DEFAULT_PRESET ({e}).') from e
  return check_package(package, package_presets, default), default


def package_presets(package: str) -> Tuple[AgentPreset, ...]:
  """Return the presets of one agent package."""
  return _load(package)[0]


def default_preset(package: str) -> AgentPreset:
  """Return the preset a package runs without --preset."""
  return pick(*_load(package), None)


def presets(packages: Optional[Iterable[str]] = None
            ) -> Dict[str, AgentPreset]:
  """Return every agent package's presets by name (packages sorted)."""
  out: Dict[str, AgentPreset] = {}
  for package in agent_packages() if packages is None else packages:
    for preset in package_presets(package):
      if preset.name in out:
        raise ValueError(f'Preset {preset.name} is defined by both '
                         f'{out[preset.name].package} and {package}.')
      out[preset.name] = preset
  return out


def markdown_table(all_presets: Iterable[AgentPreset]) -> str:
  """Return the agents table (markdown) of the given presets."""
  lines = ['| name | package | head | loss | κ | scale_grad | summary |',
           '|---|---|---|---|---|---|---|']
  for p in all_presets:
    loss = catalog.loss(p.loss)
    kappa = (f'{p.huber_param:g}'
             if catalog.HUBER_PARAM in loss.hyperparameters else '–')
    lines.append(f'| {p.name} | `{p.package}` | '
                 f'{catalog.HEADS[p.head].display} | '
                 f'{loss.display.format(**catalog.values(p))} | '
                 f'{kappa} | {"yes" if p.scale_grad else "no"} | '
                 f'{p.summary} |')
  return '\n'.join(lines) + '\n'
