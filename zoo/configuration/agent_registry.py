"""The agents: named presets that each agent package declares in its agent.py.

A preset fixes what makes an agent: the network head, the loss, QR's κ and
whether the gradient is scaled by 2/N (Adam's ε follows from the loss and the
scaling, default_optimizer_epsilon). Every top-level package of the
project with an `agent.py` defining `PRESETS` (a tuple of AgentPreset) and
`DEFAULT_PRESET` (one of their names) is an agent package. zoo's run code
never calls the discovery here: an entry point hands its own package's presets
to the runner; what needs every agent (sweeps, comparisons, the agents table)
calls `presets()`.
"""

import dataclasses
import importlib
import os
import pkgutil
from typing import Dict, Iterable, Optional, Sequence, Tuple

HEADS = ('fc', 'nc')
LOSSES = ('qr', 'cramer', 'multiquadric_cramer')
BASE_OPTIMIZER_EPSILON = 0.01 / 32
AGENT_MODULE = 'agent'


@dataclasses.dataclass(frozen=True)
class AgentPreset:
  """One named agent: what its package runs with --preset=NAME."""
  name: str           # The paper's name: 'CR-DQN', 'QR-DQN-1', ...
  package: str        # The package whose entry points run it: 'cr_dqn'.
  head: str           # 'fc' | 'nc'.
  loss: str           # One of LOSSES.
  huber_param: float  # QR's κ (ignored by the Cramér losses).
  scale_grad: bool    # Gradient × 2/N.
  summary: str        # One line for the agents table and --help.
  # The multiquadric Cramér loss's width relative to the source atoms'
  # spread (losses.atom_spread); 0 for the other losses.
  smoothing_width: float = 0.0

  def __post_init__(self):
    if self.head not in HEADS:
      raise ValueError(f'Preset {self.name}: head {self.head!r} is not one '
                       f'of {HEADS}.')
    if self.loss not in LOSSES:
      raise ValueError(f'Preset {self.name}: loss {self.loss!r} is not one '
                       f'of {LOSSES}.')
    if self.huber_param < 0:
      raise ValueError(f'Preset {self.name}: huber_param must be >= 0.')
    smoothed = self.loss == 'multiquadric_cramer'
    if (self.smoothing_width > 0) != smoothed or self.smoothing_width < 0:
      raise ValueError(f'Preset {self.name}: smoothing_width must be '
                       + ('> 0 with' if smoothed else '0 without')
                       + ' the multiquadric_cramer loss.')


def default_optimizer_epsilon(loss: str, num_quantiles: int,
                              scale_grad: bool) -> float:
  """Return Adam's ε: 0.01/32, × 2/N for the Cramér losses or scale_grad."""
  if loss != 'qr' or scale_grad:
    return BASE_OPTIMIZER_EPSILON * 2 / num_quantiles
  return BASE_OPTIMIZER_EPSILON


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


def _project_root() -> str:
  return os.path.dirname(os.path.dirname(os.path.dirname(
      os.path.abspath(__file__))))


def agent_packages(paths: Optional[Iterable[str]] = None) -> Tuple[str, ...]:
  """Return the top-level packages with an agent.py, sorted.

  Args:
    paths: directories to look in (default: the project's root).
  """
  if paths is None:
    paths = [_project_root()]
  found = set()
  for module in pkgutil.iter_modules([p for p in paths if os.path.isdir(p)]):
    if module.ispkg and os.path.isfile(os.path.join(
        module.module_finder.path, module.name, AGENT_MODULE + '.py')):
      found.add(module.name)
  return tuple(sorted(found))


def _load(package: str) -> Tuple[Tuple[AgentPreset, ...], str]:
  module = importlib.import_module(f'{package}.{AGENT_MODULE}')
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
  package_presets_, default = _load(package)
  return pick(package_presets_, default, None)


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
    kappa = f'{p.huber_param:g}' if p.loss == 'qr' else '–'
    loss = {'qr': 'QR', 'cramer': 'Cramér',
            'multiquadric_cramer': 'Cramér, multiquadric '
                                   f'(h = {p.smoothing_width:g} × spread)'
            }[p.loss]
    lines.append(f'| {p.name} | `{p.package}` | {p.head.upper()} | '
                 f'{loss} | {kappa} | '
                 f'{"yes" if p.scale_grad else "no"} | {p.summary} |')
  return '\n'.join(lines) + '\n'
