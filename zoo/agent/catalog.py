"""The losses and heads an agent is made of, each declared once.

Everything that names a loss or a head reads it here: the flags' choices and
one flag per loss hyperparameter (zoo.configuration.settings' fields), the
checks of presets and settings, Adam's ε default, the agents table
(zoo.configuration.agent_registry) and the learner's dispatch
(zoo.agent.learning.make_loss_fn). A loss's function is named, not imported,
so that reading or checking settings does not import JAX.
"""

import dataclasses
from typing import Dict, Mapping, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
  """A loss's setting: a flag and a field of presets, settings and run.json.

  Every value is >= 0. Unset on the command line, it is the preset's; a
  preset that names none has `default`.
  """
  name: str          # The flag and the field: 'smoothing_width'.
  help: str          # The flag's help, before "; unset: the preset's."
  default: float     # A preset's value when it names none.
  positive: bool = False   # Its loss needs it > 0.
  exclusive: bool = False  # Other losses need `default` (they ignore it else).


@dataclasses.dataclass(frozen=True)
class Loss:
  """A loss: its name, how the agents table shows it and how it is built."""
  name: str          # --loss=NAME.
  display: str       # The agents table's; str.format of the hyperparameters.
  # A loss fn(source [..., N], target [..., M], **hyperparameters) -> [...],
  # by dotted name (imported by zoo.agent.learning.make_loss_fn).
  function: str
  hyperparameters: Tuple[Hyperparameter, ...] = ()
  # Its gradient is 2/N of the QR loss's, so Adam's ε is 2/N of QR-DQN's
  # (as with --scale_grad).
  gradient_2_over_n: bool = False


@dataclasses.dataclass(frozen=True)
class Head:
  """A network head: --head=NAME, built by `networks` under that name."""
  name: str
  display: str       # The agents table's.


HUBER_PARAM = Hyperparameter(
    'huber_param', 'QR loss κ (0: plain QR loss)', default=1.0)
SMOOTHING_WIDTH = Hyperparameter(
    'smoothing_width', "Multiquadric Cramér loss: the kernel's width "
    "relative to the source atoms' spread, h = c × E|X − X'|", default=0.0,
    positive=True, exclusive=True)

LOSSES = (
    Loss('qr', 'QR', 'losses.quantile_regression_loss', (HUBER_PARAM,)),
    Loss('cramer', 'Cramér', 'losses.cramer_loss', gradient_2_over_n=True),
    Loss('multiquadric_cramer',
         'Cramér, multiquadric (h = {smoothing_width:g} × spread)',
         'zoo.agent.learning.relative_multiquadric_cramer_loss',
         (SMOOTHING_WIDTH,), gradient_2_over_n=True),
)
HEADS = (Head('fc', 'FC'), Head('nc', 'NC'))


def loss_names() -> Tuple[str, ...]:
  return tuple(loss.name for loss in LOSSES)


def head_names() -> Tuple[str, ...]:
  return tuple(head.name for head in HEADS)


def loss(name: str) -> Loss:
  """Return the loss called `name`; ValueError listing the losses if none."""
  for declared in LOSSES:
    if declared.name == name:
      return declared
  raise ValueError(f'loss {name!r} is not one of {loss_names()}.')


def head(name: str) -> Head:
  """Return the head called `name`; ValueError listing the heads if none."""
  for declared in HEADS:
    if declared.name == name:
      return declared
  raise ValueError(f'head {name!r} is not one of {head_names()}.')


def hyperparameters() -> Tuple[Hyperparameter, ...]:
  """Return every loss's hyperparameters, each once, in declaration order."""
  by_name: Dict[str, Hyperparameter] = {}
  for declared in LOSSES:
    for h in declared.hyperparameters:
      if by_name.setdefault(h.name, h) != h:
        raise ValueError(f'Two declarations of the hyperparameter {h.name}.')
  return tuple(by_name.values())


def hyperparameter_problem(loss_name: str, values: Mapping[str, float],
                           prefix: str = '--') -> Optional[str]:
  """Return what is wrong with the losses' hyperparameter `values`, or None.

  Args:
    loss_name: the loss that runs.
    values: every hyperparameter's value, by name.
    prefix: put before a hyperparameter's name ('--': a flag).
  """
  own = {h.name for h in loss(loss_name).hyperparameters}
  for h in hyperparameters():
    value = values[h.name]
    if value < 0:
      return f'{prefix}{h.name} must be >= 0, got {value:g}.'
    if h.name in own and h.positive and value <= 0:
      return (f'{prefix}{h.name}={value:g} with --loss={loss_name}: that '
              f'loss needs {prefix}{h.name} > 0.')
    if h.name not in own and h.exclusive and value != h.default:
      owners = [d.name for d in LOSSES if h in d.hyperparameters]
      return (f'{prefix}{h.name}={value:g} with --loss={loss_name}: only '
              f'--loss={"|".join(owners)} reads it; it must be '
              f'{h.default:g} with the others.')
  return None
