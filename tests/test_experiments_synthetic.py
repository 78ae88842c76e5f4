"""Tests for scripts.experiments.synthetic and scripts.experiments.synthetic_plot (tiny budgets)."""

import os

import jax
import jax.numpy as jnp
import numpy as np
import pytest

from scripts.experiments import synthetic
from scripts.experiments import synthetic_plot
from tests import csv_check

MIXTURE = synthetic.make_mixture([-1.0, 1.0], [2 / 3, 1 / 3])
TINY = synthetic.Settings(num_trials=2, num_iterations=5, batch_size=4,
                          seed=0)


def _run(name, **overrides):
  return synthetic.run_configuration(
      synthetic.CONFIGURATIONS_BY_NAME[name], MIXTURE,
      TINY._replace(**overrides))


# Exact staircase, d1 and collapse.

def test_exact_staircase_of_the_default_mixture_is_8_then_4():
  target = synthetic.exact_staircase(MIXTURE, 12)
  np.testing.assert_array_equal(target, [-1.0] * 8 + [1.0] * 4)


def test_exact_staircase_uses_midpoint_quantiles_when_n_p_is_not_integer():
  # N = 5: tau_hat = .1 .3 .5 .7 .9 against P(Z <= -1) = 2/3.
  np.testing.assert_array_equal(synthetic.exact_staircase(MIXTURE, 5),
                                [-1, -1, -1, 1, 1])
  three = synthetic.make_mixture([2.0, -3.0, 0.5], [0.25, 0.5, 0.25])
  # Sorted: -3 (0.5), 0.5 (0.25), 2 (0.25); CDF jumps to 0.5, 0.75, 1.
  with pytest.raises(ValueError, match='not unique'):
    synthetic.exact_staircase(three, 3)  # tau_hat_2 = 1/2 = P(Z <= -3).
  # N = 4: tau_hat = 1/8, 3/8, 5/8, 7/8.
  np.testing.assert_array_equal(synthetic.exact_staircase(three, 4),
                                [-3, -3, 0.5, 2])


def test_collapse_means_all_atoms_within_tolerance_of_one_point():
  atoms = np.array([[0.3, 0.5, 0.45],    # spread 0.2: within 0.1 of 0.4.
                    [0.3, 0.51, 0.45],   # spread 0.21.
                    [-1.0, -1.0, -1.0]])
  np.testing.assert_array_equal(synthetic.collapsed(atoms, 0.1),
                                [True, False, True])


# Training.

# The sampled-level rows differ only in their loss (tested below): one of them
# here and one in the learning test keep the suite short.
# QR's κ is data of one program (losses.quantile_regression): fc_qr_kappa0.1
# and fc_qr_kappa1 run fc_qr_kappa0's code, with another number.
@pytest.mark.parametrize('name', [
    n for n in synthetic.CONFIGURATIONS_BY_NAME
    if n not in ('iqn_qr_kappa0', 'iqn_qr_kappa1', 'iqn_plugin_cramer',
                 'fc_qr_kappa0.1', 'fc_qr_kappa1')])
def test_every_configuration_trains_and_gives_finite_d1(name):
  result = _run(name)
  sampled = name.startswith('iqn')
  # A sampled-level network is read at 100 midpoint levels per atom.
  assert result.atoms.shape == (2, 1200 if sampled else 12)
  assert np.all(np.diff(result.atoms, axis=-1) >= 0)  # Returned sorted.
  assert np.all(np.isfinite(result.d1)) and np.all(result.d1 >= 0)
  assert np.all(np.isfinite(result.final_loss))
  assert np.all(np.isfinite(result.oscillation))
  expected = {'fc': 2712, 'nc': 2702, 'iq': 2717}[name[:2]]
  assert result.num_params == expected


def test_sampled_level_rows_are_opt_in_and_the_rest_the_default():
  default = synthetic.Settings().configurations
  assert not [n for n in default if n.startswith('iqn')]
  assert set(default) | {'iqn_qr_kappa0', 'iqn_qr_kappa1',
                         'iqn_sampled_cramer', 'iqn_plugin_cramer'} == set(
                             synthetic.CONFIGURATIONS_BY_NAME)


def test_sampled_losses_take_levels_and_share_the_qr_gradient_scale():
  # Distinct sorted atoms at sorted levels, one target Dirac: QR at the
  # levels gives F̂(x_i) − τ_i, the scaled unbiased Cramér F̂(x_i) − (i −
  # 1)/(N − 1) and the scaled plug-in F̂(x_i) − (i − ½)/N.
  source = jnp.linspace(-0.9, 0.8, 12)[None]
  target = jnp.full((1, 12), 0.1)
  levels = jnp.linspace(0.02, 0.97, 12)[None]
  below = np.asarray(target[0, 0] < source[0], np.float64)
  key = jax.random.PRNGKey(0)
  rank = np.arange(12)
  want = {'iqn_qr_kappa0': below - np.asarray(levels[0]),
          'iqn_sampled_cramer': below - rank / 11,
          'iqn_plugin_cramer': below - (rank + 0.5) / 12}
  for name, expected in want.items():
    loss = synthetic.make_loss(synthetic.CONFIGURATIONS_BY_NAME[name], 12)

    def total(s, k, loss=loss):
      value = loss(k, s, target, levels)
      return value.sum(), value

    # Jitted: op by op, each operation of the loss compiles apart.
    (_, value), grad = jax.jit(jax.value_and_grad(total, has_aux=True))(
        source, key)
    assert value.shape == (1,)
    np.testing.assert_allclose(grad[0], expected, rtol=1e-5, atol=1e-6)


def test_sampled_levels_network_learns_the_mixture():
  # QR at sampled levels, long enough to learn: d1 on the level grid falls.
  result = _run('iqn_qr_kappa0', num_trials=1, num_iterations=300,
                learning_rate=1e-2, batch_size=8)
  assert result.d1[0] < 0.25 and not result.collapsed[0]
  np.testing.assert_allclose(np.mean(result.atoms), -1 / 3, atol=0.1)


def test_trials_learn_and_are_independent_and_seeded():
  # Long enough to learn: initial atoms lie near 0, at d1 near 1.
  run = lambda seed, num_trials: _run('fc_qr_kappa0', seed=seed,
                                      num_trials=num_trials,
                                      num_iterations=300, learning_rate=1e-2)
  first, again, other, fewer = run(3, 3), run(3, 3), run(4, 3), run(3, 2)
  assert np.all(first.d1 < 0.2) and not np.any(first.collapsed)
  np.testing.assert_array_equal(first.atoms, again.atoms)
  assert not np.allclose(first.atoms, other.atoms)
  assert not np.allclose(first.atoms[0], first.atoms[1])
  # Trial i's result does not depend on how many trials run beside it.
  np.testing.assert_allclose(fewer.atoms, first.atoms[:2], rtol=1e-4,
                             atol=1e-5)


def test_scaled_cramer_gradient_equals_qr_gradient_without_crossing():
  source = jnp.linspace(-0.9, 0.8, 12)[None]  # Sorted, no ties with targets.
  target = jnp.full((1, 12), 0.1)
  grads = {}
  key = jax.random.PRNGKey(0)
  for name in ('fc_cramer', 'fc_qr_kappa0', 'fc_qr_kappa1'):
    loss = synthetic.make_loss(synthetic.CONFIGURATIONS_BY_NAME[name], 12)
    grads[name] = jax.jit(jax.grad(lambda s: loss(key, s, target).sum()))(
        source)
  np.testing.assert_allclose(grads['fc_cramer'], grads['fc_qr_kappa0'],
                             rtol=1e-5, atol=1e-7)
  assert not np.allclose(grads['fc_qr_kappa1'], grads['fc_qr_kappa0'])


@pytest.mark.parametrize('name', ['fc_multiquadric', 'fc_noisy',
                                  'fc_multiquadric_relative',
                                  'nc_softplus_noisy_relative'])
def test_smoothed_losses_approach_the_scaled_cramer_gradient_as_h_shrinks(
    name):
  source = jnp.linspace(-0.9, 0.8, 12)[None]
  target = jnp.full((1, 12), 0.1)
  key = jax.random.PRNGKey(0)
  cramer = synthetic.make_loss(synthetic.CONFIGURATIONS_BY_NAME['fc_cramer'],
                               12)
  # Jitted: op by op, each operation of the losses compiles apart.
  want = jax.jit(jax.grad(lambda s: cramer(key, s, target).sum()))(source)
  configuration = synthetic.CONFIGURATIONS_BY_NAME[name]
  gaps = []
  for width in (1e-1, 1e-4):
    loss = synthetic.make_loss(configuration._replace(width=width), 12)

    def total(s, loss=loss):
      value = loss(key, s, target)
      return value.sum(), value

    (_, value), got = jax.jit(jax.value_and_grad(total, has_aux=True))(source)
    assert value.shape == (1,)
    gaps.append(float(jnp.max(jnp.abs(got - want))))
  assert gaps[1] < 1e-2 * float(jnp.max(jnp.abs(want))) and gaps[1] < gaps[0]


def test_oscillation_is_the_mean_over_atoms_of_their_std_over_steps():
  atoms = np.array([[0.0, 1.0], [0.2, 1.0], [0.4, 1.0], [0.2, 1.0]])
  want = np.mean([np.std([0.0, 0.2, 0.4, 0.2]), 0.0])
  np.testing.assert_allclose(synthetic.oscillation(atoms), want, rtol=1e-6)
  assert synthetic.oscillation(np.stack([atoms, atoms])).shape == (2,)


def test_widths_expand_only_the_smoothed_configurations():
  names = ['fc_cramer', 'fc_multiquadric', 'nc_softplus_noisy_relative']
  expanded = synthetic.expand_widths(synthetic.parse_configurations(names),
                                     (0.01, 0.3))
  assert [c.name for c in expanded] == [
      'fc_cramer', 'fc_multiquadric_h0.01', 'fc_multiquadric_h0.3',
      'nc_softplus_noisy_relative_h0.01', 'nc_softplus_noisy_relative_h0.3']
  assert [c.width for c in expanded[1:]] == [0.01, 0.3, 0.01, 0.3]
  assert expanded[1].label == 'FC, multiquadric, h=0.01'
  assert expanded[4].label == 'NC-softplus, noisy target, h=0.3 × spread'
  assert synthetic.expand_widths(expanded[:1], ()) == expanded[:1]


# Inputs.

@pytest.mark.parametrize('locations,probabilities,match', [
    ([-1, 1], [0.5, 0.6], 'sum to 1'),
    ([-1, 1], [1.2, -0.2], 'positive'),
    ([-1, 1, 2], [0.5, 0.5], 'as many'),
    ([1, 1], [0.5, 0.5], 'distinct'),
])
def test_bad_mixtures_raise(locations, probabilities, match):
  with pytest.raises(ValueError, match=match):
    synthetic.make_mixture(locations, probabilities)


def test_unknown_configuration_lists_valid_ones():
  with pytest.raises(ValueError, match='fc_cramer') as error:
    synthetic.parse_configurations(['fc_cramer', 'qr_typo'])
  assert 'qr_typo' in str(error.value)


def test_bad_settings_fail_before_any_work(tmp_path):
  good = synthetic.Settings(output_dir=str(tmp_path / 'out'))
  for overrides, match in (
      (dict(configurations=('nope',)), 'valid ones are'),
      (dict(dirac_probabilities=(0.5, 0.4)), 'sum to 1'),
      (dict(num_quantiles=3, dirac_probabilities=(0.5, 0.5)), 'not unique'),
      # A sampled-level row reads 1200 levels: 1/2400 is a midpoint there.
      (dict(configurations=('iqn_qr_kappa0',), dirac_locations=(0.0, 1.0),
            dirac_probabilities=(1 / 2400, 2399 / 2400)), 'not unique'),
      (dict(num_trials=0), 'num_trials'),
      (dict(learning_rate=-1.0), 'learning_rate'),
      (dict(widths=(0.1, 0.0)), '--widths must be positive'),
      (dict(oscillation_steps=0), 'oscillation_steps'),
      (dict(output_dir=str(tmp_path / 'f' / 'sub')), 'output_dir')):
    (tmp_path / 'f').write_text('a file, not a directory')
    with pytest.raises(ValueError, match=match):
      synthetic.run_experiment(good._replace(**overrides))


def test_probability_flags_accept_fractions():
  assert synthetic._parse_numbers('p', ['2/3', ' 1/3', '0.5']) == (
      2 / 3, 1 / 3, 0.5)
  with pytest.raises(ValueError, match='--p must be numbers'):
    synthetic._parse_numbers('p', ['a third'])


# Outputs.

def test_experiment_writes_table_and_figure_reproducibly(tmp_path):
  outputs = []
  for run in ('a', 'b'):
    out = tmp_path / run
    settings = synthetic.Settings(
        configurations=('fc_qr_kappa0', 'nc_cramer'), num_trials=2,
        num_iterations=5, batch_size=4, seed=7, output_dir=str(out))
    rows = synthetic.run_experiment(settings)
    assert [r['configuration'] for r in rows] == ['fc_qr_kappa0', 'nc_cramer']
    for name in ('synthetic.csv', 'synthetic.md', 'synthetic.png'):
      assert os.path.getsize(out / name) > 0
    outputs.append(((out / 'synthetic.csv').read_text(),
                    (out / 'synthetic.md').read_text()))
  assert outputs[0] == outputs[1]
  table = csv_check.read_back(outputs[0][0])
  assert list(table[0]) == list(synthetic.TABLE_COLUMNS)
  assert [r['configuration'] for r in table] == ['fc_qr_kappa0', 'nc_cramer']
  # Labels hold commas ('FC, QR κ=0'): they must come back whole.
  assert [r['label'] for r in table] == [r['label'] for r in rows]
  assert 'N/2' in outputs[0][1]
  assert not [f for f in os.listdir(tmp_path / 'a') if f.startswith('.')]


def test_entry_point_flags_reach_the_experiment(tmp_path):
  from absl import flags  # pylint: disable=g-import-not-at-top
  flag_values = flags.FlagValues()  # Private: no clash with other modules.
  synthetic.define_flags(flag_values)
  flag_values(['synthetic', '--configurations=fc_w1,nc_cramer',
               '--num_trials=3', '--dirac_locations=0,2,5',
               '--dirac_probabilities=1/2,1/4,1/4', '--num_quantiles=4',
               '--widths=0.01,0.3', '--oscillation_steps=7',
               f'--output_dir={tmp_path}'])
  settings = synthetic.settings_from_flags(flag_values)
  assert settings.configurations == ('fc_w1', 'nc_cramer')
  assert settings.num_trials == 3 and settings.num_quantiles == 4
  assert settings.dirac_locations == (0.0, 2.0, 5.0)
  assert settings.dirac_probabilities == (0.5, 0.25, 0.25)
  assert settings.output_dir == str(tmp_path)
  assert settings.widths == (0.01, 0.3) and settings.oscillation_steps == 7
  assert settings.num_iterations == synthetic.Settings().num_iterations


def test_default_output_is_untracked_runs_not_the_docs_copy():
  from absl import flags  # pylint: disable=g-import-not-at-top
  flag_values = flags.FlagValues()
  synthetic.define_flags(flag_values)
  flag_values(['synthetic'])
  assert synthetic.settings_from_flags(flag_values).output_dir == (
      'runs/synthetic')


def test_figure_is_a_png_with_one_panel_per_configuration():
  results = [_run('fc_qr_kappa0'), _run('fc_w1')]
  png = synthetic_plot.figure_png(results, MIXTURE)
  assert png[:8] == b'\x89PNG\r\n\x1a\n' and len(png) > 1000


def test_staircase_cdf_polyline_steps_by_one_over_n_at_each_atom():
  x, y = synthetic_plot.staircase_cdf_xy([0.5, -0.5], -2.0, 2.0)
  np.testing.assert_array_equal(x, [-2, -0.5, -0.5, 0.5, 0.5, 2])
  np.testing.assert_array_equal(y, [0, 0, 0.5, 0.5, 1, 1])
