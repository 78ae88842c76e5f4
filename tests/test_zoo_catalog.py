"""Tests for zoo.agent.catalog: each loss and head declared once."""

import importlib
import os
import subprocess
import sys
import textwrap

import pytest

from zoo.agent import catalog

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def _run_python(code: str) -> str:
  """Run `code` in a fresh interpreter (its own imports); return its stdout."""
  done = subprocess.run(
      [sys.executable, '-c', textwrap.dedent(code)], cwd=ROOT,
      capture_output=True, text=True, timeout=240,
      env=dict(os.environ, PYTHONPATH=ROOT, JAX_PLATFORMS='cpu'))
  assert done.returncode == 0, done.stderr[-3000:]
  return done.stdout


def test_the_declarations():
  assert tuple(catalog.LOSSES) == ('qr', 'cramer', 'multiquadric_cramer',
                                   'sampled_qr', 'sampled_cramer')
  assert {n: h.display for n, h in catalog.HEADS.items()} == {
      'fc': 'FC', 'nc': 'NC', 'iqn': 'IQN'}
  assert [n for n, h in catalog.HEADS.items() if h.sampled_levels] == ['iqn']
  assert [n for n, d in catalog.LOSSES.items() if d.sampled_levels] == [
      'sampled_qr', 'sampled_cramer']
  assert [h.name for h in catalog.hyperparameters()] == ['huber_param',
                                                         'smoothing_width']
  with pytest.raises(ValueError, match=r"loss 'iqn' is not one of \('qr', "):
    catalog.loss('iqn')
  with pytest.raises(ValueError, match="head 'mlp' is not one of"):
    catalog.check_head('mlp')


def test_networks_build_the_declared_heads():
  # networks imports nothing of the project: it builds heads by name, and
  # this keeps its names the declared ones.
  built = importlib.import_module('networks.quantile_network').HEADS
  assert set(built) == {n for n, h in catalog.HEADS.items()
                        if not h.sampled_levels}


def test_a_head_takes_the_losses_of_its_levels():
  problem = catalog.head_loss_problem
  assert problem('fc', 'cramer') is None
  assert problem('iqn', 'sampled_cramer') is None
  assert problem('iqn', 'qr') == (
      '--loss=qr with --head=iqn: that head samples its levels; use '
      '--loss=sampled_qr|sampled_cramer.')
  assert problem('nc', 'sampled_qr') == (
      '--loss=sampled_qr with --head=nc: that head has fixed levels; use '
      '--loss=qr|cramer|multiquadric_cramer.')


def test_hyperparameter_rules():
  problem = catalog.hyperparameter_problem
  assert problem('qr', {'huber_param': 0.0, 'smoothing_width': 0.0}) is None
  assert problem('multiquadric_cramer',
                 {'huber_param': 1.0, 'smoothing_width': 0.1}) is None
  assert problem('qr', {'huber_param': -1.0, 'smoothing_width': 0.0}) == (
      '--huber_param must be >= 0, got -1.')
  assert 'needs --smoothing_width > 0' in problem(
      'multiquadric_cramer', {'huber_param': 1.0, 'smoothing_width': 0.0})
  assert 'smoothing_width=0.1 with --loss=cramer: only ' in problem(
      'cramer', {'huber_param': 1.0, 'smoothing_width': 0.1})


def test_reading_and_checking_settings_imports_no_jax():
  # Tools that only read settings (the campaign, the reports) stay light.
  out = _run_python('''
      import sys
      from zoo.configuration import agent_registry, settings, settings_flags
      presets = agent_registry.presets()
      agent_registry.markdown_table(presets.values())
      agent_registry.default_optimizer_epsilon('cramer', 51, False)
      print(sorted(m for m in sys.modules
                   if m.split('.')[0] in ('jax', 'haiku', 'optax', 'chex')))
      ''')
  assert out.strip() == '[]'


def test_a_new_loss_with_a_hyperparameter_is_one_declaration():
  """A throwaway loss declared here reaches every reader of the declaration."""
  out = _run_python('''
      import sys
      import types
      from zoo.agent import catalog

      def tilted_loss(source, target, tilt):
        return tilt * abs(source - target).mean(-1)

      catalog.LOSSES['tilted'] = catalog.Loss(
          'Tilted (t = {tilt:g})', '__main__.tilted_loss',
          (catalog.Hyperparameter('tilt', 'Tilted loss: its tilt', 0.0,
                                  positive=True, exclusive=True),))

      from absl import flags
      from zoo.configuration import agent_registry, settings, settings_flags
      # The flags: a choice of --loss, a flag of its own.
      assert 'tilted' in flags.FLAGS['loss'].parser.enum_values
      assert flags.FLAGS['tilt'].help == (
          "Tilted loss: its tilt; unset: the preset's.")
      # A preset names it; the agents table shows it.
      preset = agent_registry.AgentPreset('T', 't', 'nc', 'tilted', False,
                                          'x', tilt=0.5)
      assert '| T | `t` | NC | Tilted (t = 0.5) | – | no | x |' in (
          agent_registry.markdown_table([preset]))
      # The settings take it from the preset and check it.
      suite = types.SimpleNamespace(
          name='toy', flag_defaults={}, resolve=dict, loops=('python',),
          check_game=lambda game: None, validate=lambda s: None)
      s = settings.resolve_settings(suite, preset, {'results_csv_path': ''})
      settings.validate_settings(suite, s)
      assert (s.loss, s.tilt, s.optimizer_epsilon) == ('tilted', 0.5, 0.01 / 32)
      for values, message in (
          ({'tilt': 0.0},
           '--tilt=0 with --loss=tilted: that loss needs --tilt > 0.'),
          ({'loss': 'cramer'},
           '--tilt=0.5 with --loss=cramer: only --loss=tilted reads it')):
        try:
          settings.validate_settings(suite, settings.resolve_settings(
              suite, preset, dict(values, results_csv_path='')))
          raise AssertionError(values)
        except settings.ConfigError as e:
          assert str(e).startswith(message), e
      assert 'jax' not in sys.modules
      # The learner's dispatch, through the one place that builds it.
      import jax.numpy as jnp
      from zoo.loops import build
      parts = build.learner_parts(suite, s, 2, network_fn=lambda x: x)
      source, target = jnp.arange(4.0).reshape(2, 2), jnp.ones((2, 2))
      for loss_fn in (parts.loss_fn, parts.loss_of_kappa(0.3)):
        assert jnp.allclose(loss_fn(source, target),
                            tilted_loss(source, target, 0.5))
      print('reached')
      ''')
  assert out.strip() == 'reached'
