r"""The one-state synthetic experiment: which loss learns a mixture of two Diracs.

One state, one action, a return of -1 (p = 2/3) or +1 (p = 1/3): each row
gives the 1-Wasserstein distance d1 of the learned atoms to the mixture's exact
staircase, collapses, the mean of atoms and their oscillation; the trials of a
configuration run as one jitted program. docs/experiments/synthetic.md
describes the configurations, the flags and the results.

  python -m scripts.experiments.synthetic                 # writes runs/synthetic/
  python -m scripts.experiments.synthetic --output_dir=docs/synthetic   # the docs' copy
  python -m scripts.experiments.synthetic --configurations=fc_multiquadric,fc_noisy \
      --widths=0.01,0.03,0.1,0.3                            # a sweep over h
  python -m scripts.experiments.synthetic \
      --configurations=fc_qr_kappa0,fc_cramer,iqn_qr_kappa0,iqn_qr_kappa1,iqn_sampled_cramer,iqn_plugin_cramer \
      --output_dir=docs/synthetic/sampled                   # sampled levels
"""

import csv
import fractions
import functools
import io
import os
import sys
import time
from typing import Callable, NamedTuple, Sequence

from absl import flags
import chex
import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax

import losses
import networks
from scripts.analysis import tables
from zoo.storage import files
from zoo.configuration import cli


class Configuration(NamedTuple):
  """One head/loss pair of the synthetic experiment."""
  name: str
  label: str
  head: str             # 'fc', 'nc' or 'iqn' (sampled levels)
  loss: str             # 'qr', 'cramer', 'w1', 'multiquadric', 'noisy';
                        # with 'iqn': 'sampled_qr', 'sampled_cramer' or
                        # 'plugin_cramer'
  huber_param: float = 0.0
  scale_activation: str = 'relu'
  # The smoothed Cramér losses: width h, absolute or (relative_width) times
  # the learned atoms' own spread E|X − X'| (losses.atom_spread).
  width: float = 0.0
  relative_width: bool = False

  @property
  def sampled(self) -> bool:
    """Whether the network is evaluated at sampled levels (an IQN)."""
    return self.head == 'iqn'

  def with_width(self, width: float) -> 'Configuration':
    """Return this configuration at another width, named after it."""
    unit = ' × spread' if self.relative_width else ''
    base_label = self.label.rsplit(', h=', 1)[0]
    return self._replace(name=f'{self.name}_h{width:g}',
                         label=f'{base_label}, h={width:g}{unit}',
                         width=width)


SMOOTHED_LOSSES = ('multiquadric', 'noisy')


CONFIGURATIONS = (
    Configuration('fc_qr_kappa1', 'FC, QR κ=1', 'fc', 'qr', 1.0),
    Configuration('fc_qr_kappa0.1', 'FC, QR κ=0.1', 'fc', 'qr', 0.1),
    Configuration('fc_qr_kappa0', 'FC, QR κ=0', 'fc', 'qr', 0.0),
    Configuration('fc_cramer', 'FC, Cramér', 'fc', 'cramer'),
    Configuration('nc_qr_kappa0.1', 'NC, QR κ=0.1', 'nc', 'qr', 0.1),
    Configuration('nc_cramer', 'NC, Cramér', 'nc', 'cramer'),
    Configuration('fc_w1', 'FC, 1-Wasserstein', 'fc', 'w1'),
    Configuration('nc_softplus_cramer', 'NC-softplus, Cramér', 'nc', 'cramer',
                  scale_activation='softplus'),
    # The smoothed Cramér candidates (docs: "A smoothed Cramér loss").
    Configuration('fc_multiquadric', 'FC, multiquadric, h=0.1', 'fc',
                  'multiquadric', width=0.1),
    Configuration('nc_softplus_multiquadric', 'NC-softplus, multiquadric, h=0.1',
                  'nc', 'multiquadric', scale_activation='softplus', width=0.1),
    Configuration('fc_noisy', 'FC, noisy target, h=0.1', 'fc', 'noisy',
                  width=0.1),
    Configuration('nc_softplus_noisy', 'NC-softplus, noisy target, h=0.1', 'nc',
                  'noisy', scale_activation='softplus', width=0.1),
    Configuration('fc_multiquadric_relative',
                  'FC, multiquadric, h=0.1 × spread', 'fc', 'multiquadric',
                  width=0.1, relative_width=True),
    Configuration('nc_softplus_noisy_relative',
                  'NC-softplus, noisy target, h=0.1 × spread', 'nc', 'noisy',
                  scale_activation='softplus', width=0.1, relative_width=True),
)
# Run by default: the published configurations and the smoothed candidates.
DEFAULT_CONFIGURATIONS = tuple(c.name for c in CONFIGURATIONS)
CONFIGURATIONS += (
    # Sampled levels (docs: "Sampled quantile levels"), opt-in by name.
    Configuration('iqn_qr_kappa0', 'IQN, QR κ=0 at sampled levels', 'iqn',
                  'sampled_qr', 0.0),
    Configuration('iqn_qr_kappa1', 'IQN, QR κ=1 at sampled levels', 'iqn',
                  'sampled_qr', 1.0),
    Configuration('iqn_sampled_cramer', 'IQN, unbiased sampled Cramér', 'iqn',
                  'sampled_cramer'),
    Configuration('iqn_plugin_cramer', 'IQN, plug-in Cramér', 'iqn',
                  'plugin_cramer'),
)
CONFIGURATIONS_BY_NAME = {c.name: c for c in CONFIGURATIONS}

# Network sizes of the published experiment (docs/agents.md, "Networks"): 2712 / 2702
# parameters for N = 12.
FC_NUM_LAYERS, FC_HIDDEN_SIZE = 2, 45
NC_NUM_LAYERS, NC_HIDDEN_SIZE = 2, 32
# The IQN network: a constant state embedding of this width (one ReLU layer on
# the input 1.0), DQN Zoo's 64 cosines, a head of one layer of this width:
# 2717 parameters, the size of the others.
IQN_WIDTH = 28
# The sampled-level networks' distribution is read at this many midpoint
# levels per atom.
EVALUATION_LEVELS_PER_ATOM = 100


class Settings(NamedTuple):
  """Every knob of the experiment; defaults are the published setting."""
  configurations: Sequence[str] = DEFAULT_CONFIGURATIONS
  num_trials: int = 100
  num_iterations: int = 1000
  num_quantiles: int = 12
  learning_rate: float = 1e-3
  batch_size: int = 32
  dirac_locations: Sequence[float] = (-1.0, 1.0)
  dirac_probabilities: Sequence[float] = (2 / 3, 1 / 3)
  collapse_tolerance: float = 0.1
  seed: int = 1
  output_dir: str = 'runs/synthetic'  # docs/synthetic is tracked: explicit.
  oscillation_steps: int = 100
  widths: Sequence[float] = ()  # Empty: each configuration's own width.


_HELP = {
    'configurations': ('Configurations to run, from: ' +
                       ', '.join(CONFIGURATIONS_BY_NAME) +
                       ' (the default: all but the sampled-level iqn_ ones).'),
    'num_trials': 'Independent trials per configuration.',
    'num_iterations': 'Adam steps per trial.',
    'num_quantiles': 'Atoms N.',
    'learning_rate': 'Adam step size.',
    'batch_size': 'Sampled Diracs per Adam step.',
    'dirac_locations': 'Locations of the mixture Diracs.',
    'dirac_probabilities': ('Probabilities of the mixture Diracs (numbers or '
                            'fractions such as 2/3; they must sum to 1).'),
    'collapse_tolerance': ('A trial collapsed if all its atoms lie within '
                           'this distance of one point (max atom - min atom '
                           '<= 2 x tolerance).'),
    'seed': 'Seed; trial i uses fold_in(seed, i).',
    'output_dir': ('Where synthetic.csv, synthetic.md and synthetic.png are '
                   'written (the copy in the docs: '
                   '--output_dir=docs/synthetic).'),
    'oscillation_steps': ('Oscillation = the std of each sorted atom over the '
                          'last this many steps (all steps if fewer), '
                          'averaged over atoms (then over trials).'),
    'widths': ('Sweep of the smoothing width h: each smoothed configuration '
               "named in --configurations runs once per width (absolute, or "
               "times the atoms' spread for the _relative ones); the others "
               "run once. Empty: each configuration's own width."),
}
# The lists of numbers, parsed by _parse_numbers (fractions allowed).
_NUMBER_LISTS = {'dirac_locations': ['-1', '1'],
                 'dirac_probabilities': ['2/3', '1/3'], 'widths': []}


def define_flags(flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Define this entry point's flags (only when run, to avoid flag clashes)."""
  define = {int: flags.DEFINE_integer, float: flags.DEFINE_float,
            str: flags.DEFINE_string}
  for name, default in Settings()._asdict().items():
    if name in _NUMBER_LISTS or name == 'configurations':
      flags.DEFINE_list(name, _NUMBER_LISTS.get(name, list(default)),
                        _HELP[name], flag_values=flag_values)
    else:
      define[type(default)](name, default, _HELP[name],
                            flag_values=flag_values)


def _parse_numbers(name: str, values: Sequence[str]) -> tuple[float, ...]:
  try:
    return tuple(float(fractions.Fraction(v.strip())) for v in values)
  except (ValueError, ZeroDivisionError) as e:
    raise ValueError(f'--{name} must be numbers or fractions such as 2/3, got '
                     f'{list(values)}.') from e


def settings_from_flags(f: flags.FlagValues = flags.FLAGS) -> Settings:
  """Return the Settings given on the command line; raise ValueError."""
  values = {name: getattr(f, name) for name in Settings._fields}
  values['configurations'] = tuple(values['configurations'])
  values.update({name: _parse_numbers(name, values[name])
                 for name in _NUMBER_LISTS})
  return Settings(**values)


class Mixture(NamedTuple):
  locations: np.ndarray      # [K], increasing
  probabilities: np.ndarray  # [K]


class TrialResults(NamedTuple):
  """Results of one configuration, one row per trial."""
  configuration: Configuration
  num_params: int
  seconds: float
  atoms: np.ndarray        # [T, N] learned atoms, sorted
  d1: np.ndarray           # [T]
  collapsed: np.ndarray    # [T] bool
  final_loss: np.ndarray   # [T] loss at the last step
  oscillation: np.ndarray  # [T] mean over atoms of their std over the last K


def make_mixture(locations: Sequence[float],
                 probabilities: Sequence[float]) -> Mixture:
  """Return the mixture sorted by location; raise ValueError on bad input."""
  locations = np.asarray(locations, np.float64)
  probabilities = np.asarray(probabilities, np.float64)
  if locations.ndim != 1 or locations.shape != probabilities.shape:
    raise ValueError(
        f'Give as many Dirac probabilities as locations: got locations '
        f'{locations.tolist()} and probabilities {probabilities.tolist()}.')
  if len(np.unique(locations)) != len(locations):
    raise ValueError(f'Dirac locations must be distinct: {locations.tolist()}.')
  if not np.all(np.isfinite(locations)):
    raise ValueError(f'Dirac locations must be finite: {locations.tolist()}.')
  if np.any(probabilities <= 0) or abs(probabilities.sum() - 1) > 1e-6:
    raise ValueError(
        f'Dirac probabilities must be positive and sum to 1; got '
        f'{probabilities.tolist()} (sum {probabilities.sum():.9g}).')
  order = np.argsort(locations)
  return Mixture(locations[order], probabilities[order] / probabilities.sum())


def exact_staircase(mixture: Mixture, num_quantiles: int) -> np.ndarray:
  """Return the N-atom staircase closest to the mixture: F^-1(tau_hat_i).

  tau_hat_i = (2i - 1) / (2N) are the quantile midpoints; this is the
  projection (Cramér, 1-Wasserstein and QR agree). It is unique unless some
  tau_hat_i equals a cumulative probability of the mixture (2N P(Z <= z_k) odd):
  then every point between two Diracs is a minimiser and we raise ValueError.
  """
  if int(num_quantiles) != num_quantiles or num_quantiles < 1:
    raise ValueError(f'num_quantiles must be a positive integer, got '
                     f'{num_quantiles!r}.')
  tau_hat = (2 * np.arange(1, num_quantiles + 1) - 1) / (2 * num_quantiles)
  cdf = np.cumsum(mixture.probabilities)[:-1]  # Interior jumps only.
  ties = np.abs(tau_hat[:, None] - cdf[None, :]) < 1e-9
  if np.any(ties):
    i, k = np.argwhere(ties)[0]
    raise ValueError(
        f'The exact staircase is not unique for N={num_quantiles}: the '
        f'quantile midpoint tau_hat_{i + 1}={tau_hat[i]:.6g} equals the '
        f'mixture CDF {cdf[k]:.6g} at {mixture.locations[k]:g}, so atom {i + 1} '
        f'could sit anywhere in [{mixture.locations[k]:g}, '
        f'{mixture.locations[k + 1]:g}]. Choose another num_quantiles.')
  index = np.searchsorted(cdf, tau_hat, side='left')
  return mixture.locations[index]


def collapsed(atoms, tolerance: float):
  """Return whether all atoms [..., N] lie within `tolerance` of one point."""
  atoms = jnp.asarray(atoms)
  return jnp.max(atoms, -1) - jnp.min(atoms, -1) <= 2 * tolerance


def make_network(configuration: Configuration,
                 num_quantiles: int) -> hk.Transformed:
  """Return the one-state network of a configuration (1 action).

  No torso, except for the IQN network, whose level embedding multiplies a
  state embedding: apply(params, state, levels [B, L]) -> atoms [B, 1, L].
  """
  if configuration.sampled:
    return hk.without_apply_rng(hk.transform(networks.iqn_network(
        networks.mlp_torso((IQN_WIDTH,)), 1, hidden_sizes=(IQN_WIDTH,))))
  if configuration.head == 'fc':
    head = networks.fc_quantile_head(1, num_quantiles, FC_NUM_LAYERS,
                                     FC_HIDDEN_SIZE)
  else:
    head = networks.nc_quantile_head(1, num_quantiles, NC_NUM_LAYERS,
                                     NC_HIDDEN_SIZE,
                                     configuration.scale_activation)
  return hk.without_apply_rng(hk.transform(
      networks.quantile_network(networks.mlp_torso(()), head)))


def make_loss(configuration: Configuration, num_quantiles: int
              ) -> Callable[..., jnp.ndarray]:
  """Return loss(key, source [B, N], target [B, N], levels=None) -> [B].

  Only the noisy-target loss draws from the key; only QR at sampled levels
  reads the levels [B, N] of the source atoms.
  """
  c = configuration
  # The Cramér losses carry the published code's N/2 factor: the same
  # gradient scale as QR, for Adam's eps.
  half_n = num_quantiles / 2

  def width_of(source):
    if c.relative_width:
      return c.width * jax.lax.stop_gradient(losses.atom_spread(source))
    return c.width

  cramer = lambda k, s, t, levels: half_n * losses.cramer_loss(s, t)
  by_name = {
      'qr': lambda k, s, t, levels: losses.quantile_regression_loss(
          s, t, c.huber_param),
      'sampled_qr': lambda k, s, t, levels: (
          losses.sampled_quantile_regression_loss(s, t, levels,
                                                  c.huber_param)),
      'w1': lambda k, s, t, levels: losses.wasserstein1(s, t),
      'cramer': cramer,
      'plugin_cramer': cramer,
      # The target's copies of one Dirac are not independent draws: its term
      # would estimate 0, not E|Y − Y'|; dropped (it is free of the source).
      'sampled_cramer': lambda k, s, t, levels: half_n * (
          losses.sampled_cramer_loss(s, t, target_term=False)),
      'multiquadric': lambda k, s, t, levels: half_n * (
          losses.multiquadric_cramer_loss(s, t, width_of(s))),
      'noisy': lambda k, s, t, levels: half_n * (
          losses.noisy_target_cramer_loss(k, s, t, width_of(s))[1]),
  }
  if c.loss not in by_name:
    raise ValueError(f'Unknown loss {c.loss!r}.')
  return lambda key, source, target, levels=None: by_name[c.loss](
      key, source, target, levels)


def oscillation(atoms_over_steps):
  """Return the std of each atom over steps, averaged over atoms.

  Args:
    atoms_over_steps: [..., K, N] sorted atoms at the last K steps.
  """
  return jnp.mean(jnp.std(atoms_over_steps, axis=-2), axis=-1)


def make_train_trials(configuration: Configuration, mixture: Mixture,
                      num_quantiles: int, num_iterations: int,
                      learning_rate: float, batch_size: int,
                      collapse_tolerance: float, oscillation_steps: int = 100):
  """Return train_trials(keys [T]) -> {TrialResults field: [T, ...]}, pure.

  Each trial initialises the network from its key, then takes
  `num_iterations` Adam steps on batches of sampled Diracs. A sampled-level
  network also draws N levels per batch element and step.
  """
  network = make_network(configuration, num_quantiles)
  loss_fn = make_loss(configuration, num_quantiles)
  optimizer = optax.adam(learning_rate)  # Default eps = 1e-8, as published.
  locations = jnp.asarray(mixture.locations, jnp.float32)
  log_probabilities = jnp.log(jnp.asarray(mixture.probabilities, jnp.float32))
  num_evaluated = evaluated_atoms(configuration, num_quantiles)
  target_staircase = jnp.asarray(exact_staircase(mixture, num_evaluated),
                                 jnp.float32)
  # One state: every batch element sees the same atoms, so apply the network
  # once and broadcast (same loss and gradient as a batch of constant inputs).
  state = jnp.ones((1, 1), jnp.float32)
  midpoints = (jnp.arange(num_quantiles, dtype=jnp.float32) + 0.5
               ) / num_quantiles
  grid = (jnp.arange(num_evaluated, dtype=jnp.float32) + 0.5) / num_evaluated

  def atoms_of(params, levels=midpoints):
    """Return the atoms [N], or a sampled-level network's at levels [L]."""
    if configuration.sampled:
      return network.apply(params, state, levels[None]).q_atoms[0, 0]
    return network.apply(params, state).q_atoms[0, 0]

  def batch_loss(params, key):
    if configuration.sampled:
      # Levels of their own key: the Diracs drawn stay the others'.
      levels = jax.random.uniform(jax.random.fold_in(key, 2),
                                  (batch_size, num_quantiles))
      source = network.apply(params, jnp.ones((batch_size, 1)),
                             levels).q_atoms[:, 0]
    else:
      levels = None
      source = jnp.broadcast_to(atoms_of(params), (batch_size, num_quantiles))
    which = jax.random.categorical(key, log_probabilities, shape=(batch_size,))
    target = jnp.broadcast_to(locations[which][:, None],
                              (batch_size, num_quantiles))
    # A key of its own for a randomised loss: the Diracs drawn stay those of
    # the other configurations.
    per_example = loss_fn(jax.random.fold_in(key, 1), source, target, levels)
    chex.assert_shape(per_example, (batch_size,))
    return jnp.mean(per_example)

  def train_step(carry, _):
    params, opt_state, key = carry
    key, batch_key = jax.random.split(key)
    loss, grads = jax.value_and_grad(batch_loss)(params, batch_key)
    updates, opt_state = optimizer.update(grads, opt_state)
    params = optax.apply_updates(params, updates)
    return (params, opt_state, key), (loss, jnp.sort(atoms_of(params)))

  def train_trial(key):
    init_key, key = jax.random.split(key)
    params = network.init(init_key, state, *(
        (midpoints[None],) if configuration.sampled else ()))
    opt_state = optimizer.init(params)
    (params, _, _), (loss, atoms_over_steps) = jax.lax.scan(
        train_step, (params, opt_state, key), None, length=num_iterations)
    atoms = jnp.sort(atoms_of(params, grid))  # [N], or [100 N] sampled.
    # d1 of two sorted staircases, written out: through losses.wasserstein1
    # XLA would constant-fold the sort of the 1200-atom target.
    return dict(atoms=atoms,
                d1=jnp.mean(jnp.abs(atoms - target_staircase), -1),
                collapsed=collapsed(atoms, collapse_tolerance),
                final_loss=loss[-1],
                oscillation=oscillation(atoms_over_steps[-oscillation_steps:]))

  return jax.vmap(train_trial)


def evaluated_atoms(configuration: Configuration, num_quantiles: int) -> int:
  """Return how many atoms measure a configuration's learned distribution."""
  if configuration.sampled:
    return EVALUATION_LEVELS_PER_ATOM * num_quantiles
  return num_quantiles


@functools.lru_cache(maxsize=None)
def _jitted_train_trials(configuration, locations, probabilities, *args):
  """Return the jitted train_trials, compiled once per distinct setting."""
  mixture = Mixture(np.asarray(locations), np.asarray(probabilities))
  return jax.jit(make_train_trials(configuration, mixture, *args))


def count_params(configuration: Configuration, num_quantiles: int) -> int:
  inputs = (jnp.ones((1, 1)),)
  if configuration.sampled:
    inputs += (jnp.ones((1, num_quantiles)),)
  shapes = jax.eval_shape(make_network(configuration, num_quantiles).init,
                          jax.random.PRNGKey(0), *inputs)
  return sum(int(np.prod(v.shape)) for v in jax.tree_util.tree_leaves(shapes))


def run_configuration(configuration: Configuration, mixture: Mixture,
                      s: Settings) -> TrialResults:
  """Train all trials of one configuration under `s` and measure them."""
  start = time.perf_counter()
  train_trials = _jitted_train_trials(
      configuration, tuple(mixture.locations), tuple(mixture.probabilities),
      s.num_quantiles, s.num_iterations, s.learning_rate, s.batch_size,
      s.collapse_tolerance, s.oscillation_steps)
  # Trial i's key does not depend on num_trials.
  keys = jax.vmap(lambda i: jax.random.fold_in(jax.random.PRNGKey(s.seed), i))(
      jnp.arange(s.num_trials))
  outputs = jax.device_get(train_trials(keys))
  return TrialResults(configuration,
                      count_params(configuration, s.num_quantiles),
                      time.perf_counter() - start, **outputs)


TABLE_COLUMNS = ('configuration', 'label', 'parameters', 'd1_mean', 'd1_std',
                 'collapsed', 'trials', 'd1_mean_not_collapsed',
                 'mean_of_atoms', 'oscillation')


def table_rows(results: Sequence[TrialResults]):
  """Return one dict per configuration (TABLE_COLUMNS, and 'sampled')."""
  rows = []
  for r in results:
    kept = r.d1[~r.collapsed]
    rows.append(dict(
        configuration=r.configuration.name, label=r.configuration.label,
        parameters=r.num_params, d1_mean=float(np.mean(r.d1)),
        # Population standard deviation over trials (ddof=0).
        d1_std=float(np.std(r.d1)), collapsed=int(np.sum(r.collapsed)),
        trials=len(r.d1),
        d1_mean_not_collapsed=float(np.mean(kept)) if len(kept) else np.nan,
        mean_of_atoms=float(np.mean(r.atoms)),
        oscillation=float(np.mean(r.oscillation)),
        sampled=r.configuration.sampled))
  return rows


def format_csv(rows) -> str:
  """Return the table as CSV text (labels hold commas: the csv module quotes)."""
  buffer = io.StringIO()
  writer = csv.writer(buffer, lineterminator='\n')
  writer.writerow(TABLE_COLUMNS)
  for row in rows:
    writer.writerow([f'{row[c]:.6f}' if isinstance(row[c], float) else row[c]
                     for c in TABLE_COLUMNS])
  return buffer.getvalue()


def format_markdown(rows, mixture: Mixture, s: Settings) -> str:
  num_quantiles = s.num_quantiles
  target = exact_staircase(mixture, num_quantiles)
  lines = tables.markdown(
      ['configuration', 'parameters', 'd1 mean', 'd1 std', 'collapsed',
       'd1 mean, not collapsed', 'mean of atoms', 'oscillation'],
      [[row['label'], row['parameters'], f"{row['d1_mean']:.4f}",
        f"{row['d1_std']:.4f}", f"{row['collapsed']}/{row['trials']}",
        '–' if np.isnan(row['d1_mean_not_collapsed'])
        else f"{row['d1_mean_not_collapsed']:.4f}",
        f"{row['mean_of_atoms']:+.4f}", f"{row['oscillation']:.4f}"]
       for row in rows], 'l' + 'r' * 7)
  mean = float(np.dot(mixture.locations, mixture.probabilities))
  lines += [
      '',
      f'd1: 1-Wasserstein distance between the {num_quantiles} learned atoms '
      f'and the exact staircase {np.round(target, 6).tolist()} (mean and '
      f'population std over trials). Collapsed: all atoms within '
      f'{s.collapse_tolerance:g} of one point. Mean of atoms: averaged over '
      f'trials (mixture mean {mean:+.4f}). Oscillation: the std of each sorted '
      f'atom over the last {s.oscillation_steps} steps (all if fewer), '
      f'averaged over atoms and trials. The Cramér losses (plain and smoothed) are multiplied by '
      f'N/2, as in the published code.',
  ]
  if any(row['sampled'] for row in rows):
    lines[-1] += (
        f' IQN rows: the network is trained at {num_quantiles} levels drawn '
        f'uniformly per batch element and step; d1, collapse and the mean of '
        f'atoms are measured on its outputs at '
        f'{EVALUATION_LEVELS_PER_ATOM * num_quantiles} midpoint levels '
        f'(against the exact staircase of that size, which is the mixture '
        f'itself when the {num_quantiles}-atom staircase is), the oscillation '
        f'on its outputs at the {num_quantiles} midpoints.')
  return '\n'.join(lines) + '\n'


def parse_configurations(names: Sequence[str]) -> list[Configuration]:
  unknown = [n for n in names if n not in CONFIGURATIONS_BY_NAME]
  if unknown or not names:
    raise ValueError(
        f'Unknown configuration(s) {unknown}; valid ones are: '
        f'{", ".join(CONFIGURATIONS_BY_NAME)}.')
  return [CONFIGURATIONS_BY_NAME[n] for n in names]


def expand_widths(configurations: Sequence[Configuration],
                  widths: Sequence[float]) -> list[Configuration]:
  """Return the configurations with each smoothed one once per width."""
  return [c.with_width(w) if w else c for c in configurations
          for w in (widths if c.loss in SMOOTHED_LOSSES and widths else [0])]


def check_settings(settings: Settings
                   ) -> tuple[list[Configuration], Mixture]:
  """Validate every setting before any work; raise ValueError naming the fix."""
  configurations = parse_configurations(settings.configurations)
  for name in ('widths', 'oscillation_steps', 'num_trials', 'num_iterations',
               'num_quantiles', 'learning_rate', 'batch_size',
               'collapse_tolerance'):
    value = getattr(settings, name)
    for v in value if name == 'widths' else [value]:
      if not v > 0:
        raise ValueError(f'--{name} must be positive, got {v!r}.')
  configurations = expand_widths(configurations, settings.widths)
  mixture = make_mixture(settings.dirac_locations,
                         settings.dirac_probabilities)
  for size in sorted({evaluated_atoms(c, settings.num_quantiles)
                      for c in configurations}):
    exact_staircase(mixture, size)
  try:
    files.make_writable_directory(settings.output_dir)
  except OSError as e:
    raise ValueError(f'Cannot write to --output_dir={settings.output_dir!r} '
                     f'({e}); choose a writable directory.') from e
  return configurations, mixture


def run_experiment(settings: Settings) -> list[dict]:
  """Run the configurations, print and write the table and figure."""
  configurations, mixture = check_settings(settings)
  # Imported here: matplotlib is only needed once the arguments are good.
  from scripts.experiments import synthetic_plot  # pylint: disable=g-import-not-at-top

  num_quantiles = settings.num_quantiles
  target = exact_staircase(mixture, num_quantiles)
  print(f'Target: mixture of Diracs at {mixture.locations.tolist()} with '
        f'probabilities {np.round(mixture.probabilities, 6).tolist()}; exact '
        f'{num_quantiles}-atom staircase {target.tolist()}.')
  print('The Cramér losses (plain and smoothed) are multiplied by N/2, as in '
        'the published code.')
  start = time.perf_counter()
  results = []
  for i, configuration in enumerate(configurations):
    result = run_configuration(configuration, mixture, settings)
    results.append(result)
    eta = (time.perf_counter() - start) / (i + 1) * (
        len(configurations) - i - 1)
    steps_per_s = settings.num_trials * settings.num_iterations / result.seconds
    print(f'[{i + 1}/{len(configurations)}] {configuration.name:20s} '
          f'd1 {np.mean(result.d1):.4f} ± {np.std(result.d1):.4f}, '
          f'collapsed {int(result.collapsed.sum())}/{len(result.d1)}, '
          f'oscillation {np.mean(result.oscillation):.4f}, '
          f'{result.seconds:.1f} s ({steps_per_s:,.0f} trial-steps/s, '
          f'compile included), ETA {eta:.0f} s', flush=True)

  rows = table_rows(results)
  markdown = format_markdown(rows, mixture, settings)
  for name, content in (
      ('synthetic.csv', format_csv(rows)), ('synthetic.md', markdown),
      ('synthetic.png', synthetic_plot.figure_png(results, mixture))):
    files.write_atomically(os.path.join(settings.output_dir, name), content)
  print(f'\n{markdown}')
  print('Wrote synthetic.csv, synthetic.md and synthetic.png to '
        f'{settings.output_dir}.')
  print(f'Wall time: {time.perf_counter() - start:.1f} s.')
  return rows


def main(unused_argv):
  try:
    settings = settings_from_flags()
    check_settings(settings)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  run_experiment(settings)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
