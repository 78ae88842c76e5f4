"""The losses and heads an agent is made of, each declared once.

Everything that names a loss or a head reads it here (ARCHITECTURE.md, "A
loss"). A loss's function is named, not imported: checking settings needs
no JAX.
"""

import dataclasses
from typing import Any, Callable, Dict, Mapping, Optional, Tuple


@dataclasses.dataclass(frozen=True)
class Hyperparameter:
  """A loss's setting (>= 0): a flag, and a field of presets and settings."""
  name: str          # The flag and the field: 'smoothing_width'.
  help: str          # The flag's help, before "; unset: the preset's."
  default: float     # A preset's value when it names none.
  positive: bool = False   # Its loss needs it > 0.
  exclusive: bool = False  # Other losses need `default` (they ignore it else).


@dataclasses.dataclass(frozen=True)
class Loss:
  """A loss (--loss=NAME, its name in LOSSES) and how it is built."""
  display: str       # The agents table's; str.format of the hyperparameters.
  # A loss fn(source [..., N], target [..., M], **hyperparameters) -> [...],
  # by dotted name (imported by zoo.agent.learning.make_loss_fn).
  function: str
  hyperparameters: Tuple[Hyperparameter, ...] = ()
  # Its gradient is 2/N of the QR loss's, so Adam's ε is 2/N of QR-DQN's
  # (as with --scale_grad).
  gradient_2_over_n: bool = False
  # It takes atoms at sampled levels (a head with sampled_levels): its
  # function is fn(source, target, levels [..., N], **hyperparameters).
  sampled_levels: bool = False
  # The fewest source atoms N it is defined for (per action and state).
  min_source_atoms: int = 1


@dataclasses.dataclass(frozen=True)
class Head:
  """A network head (--head=NAME, its name in HEADS)."""
  display: str       # The agents table's.
  # The network takes the levels as an input, sampled uniformly per state
  # and per use (IQN): fn(observations, levels [B, N]); the settings'
  # tau_samples_* give the counts. Else fixed levels: fn(observations).
  sampled_levels: bool = False


HUBER_PARAM = Hyperparameter(
    'huber_param', 'QR loss κ (0: plain QR loss)', default=1.0)
LOSSES: Dict[str, Loss] = {
    'qr': Loss('QR', 'losses.quantile_regression_loss', (HUBER_PARAM,)),
    'cramer': Loss('Cramér', 'losses.cramer_loss', gradient_2_over_n=True),
    'multiquadric_cramer': Loss(
        'Cramér, multiquadric (h = {smoothing_width:g} × spread)',
        'zoo.agent.learning.relative_multiquadric_cramer_loss',
        (Hyperparameter(
            'smoothing_width', "Multiquadric Cramér loss: the kernel's width "
            "relative to the source atoms' spread, h = c × E|X − X'|",
            default=0.0, positive=True, exclusive=True),),
        gradient_2_over_n=True),
    # At sampled levels the atoms are samples of the return distribution.
    'sampled_qr': Loss('QR at sampled levels',
                       'losses.sampled_quantile_regression_loss',
                       (HUBER_PARAM,), sampled_levels=True),
    # The Cramér distance's unbiased estimate (U-statistic): its gradient is
    # 2/N of sampled QR's in expectation (docs: Sampled quantile levels).
    'sampled_cramer': Loss('Cramér, sampled levels (unbiased)',
                           'zoo.agent.learning.sampled_cramer_loss',
                           gradient_2_over_n=True, sampled_levels=True,
                           min_source_atoms=2),
}
# The heads by --head name. networks builds the fixed-level ones
# (networks.quantile_network.HEADS, by the same names) and the IQN network
# (networks.iqn_network).
HEADS: Dict[str, Head] = {
    'fc': Head('FC'), 'nc': Head('NC'),
    'iqn': Head('IQN', sampled_levels=True),
}


def loss(name: str) -> Loss:
  """Return the loss called `name`; ValueError listing the losses if none."""
  if name not in LOSSES:
    raise ValueError(f'loss {name!r} is not one of {tuple(LOSSES)}.')
  return LOSSES[name]


def check_head(name: str) -> None:
  """Raise ValueError listing the heads if none is called `name`."""
  if name not in HEADS:
    raise ValueError(f'head {name!r} is not one of {tuple(HEADS)}.')


def head_loss_problem(head: str, loss_name: str,
                      prefix: str = '--') -> Optional[str]:
  """Return what is wrong with `loss_name` on `head` (None if nothing is)."""
  sampled = HEADS[head].sampled_levels
  if loss(loss_name).sampled_levels == sampled:
    return None
  fits = '|'.join(n for n, d in LOSSES.items() if d.sampled_levels == sampled)
  kind = 'samples its levels' if sampled else 'has fixed levels'
  return (f'{prefix}loss={loss_name} with {prefix}head={head}: that head '
          f'{kind}; use {prefix}loss={fits}.')


def hyperparameters() -> Tuple[Hyperparameter, ...]:
  """Return every loss's hyperparameters, each once, in declaration order."""
  by_name: Dict[str, Hyperparameter] = {}
  for declared in LOSSES.values():
    for h in declared.hyperparameters:
      if by_name.setdefault(h.name, h) != h:
        raise ValueError(f'Two declarations of the hyperparameter {h.name}.')
  return tuple(by_name.values())


def values(record) -> Dict[str, float]:
  """Return the hyperparameters of a preset or settings `record`, by name."""
  return {h.name: getattr(record, h.name) for h in hyperparameters()}


def add_fields(field: Callable[[Hyperparameter], Tuple[Any, Any]],
               after: Optional[str] = None):
  """Return a class decorator (under @dataclass) adding their fields.

  field: fn(hyperparameter) -> (annotation, default or dataclasses.field);
  after: the field they follow (None: last).
  """
  def decorate(cls):
    fields = list(cls.__annotations__.items())
    at = [name for name, _ in fields].index(after) + 1 if after else len(
        fields)
    added = {h.name: field(h) for h in hyperparameters()}
    cls.__annotations__ = dict(
        fields[:at] + [(name, kind) for name, (kind, _) in added.items()]
        + fields[at:])
    for name, (_, default) in added.items():
      setattr(cls, name, default)
    return cls
  return decorate


def hyperparameter_problem(loss_name: str, given: Mapping[str, float],
                           prefix: str = '--') -> Optional[str]:
  """Return what is wrong with the values `given` to `loss_name`, or None.

  prefix: before a name ('--': a flag).
  """
  own = loss(loss_name).hyperparameters
  for h in hyperparameters():
    value, name = given[h.name], prefix + h.name
    if value < 0:
      return f'{name} must be >= 0, got {value:g}.'
    if h in own and h.positive and value <= 0:
      return (f'{name}={value:g} with --loss={loss_name}: that loss needs '
              f'{name} > 0.')
    if h not in own and h.exclusive and value != h.default:
      owners = '|'.join(n for n, d in LOSSES.items() if h in d.hyperparameters)
      return (f'{name}={value:g} with --loss={loss_name}: only --loss={owners}'
              f' reads it; it must be {h.default:g} with the others.')
  return None
