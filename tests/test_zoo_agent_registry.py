"""Tests for zoo.configuration.agent_registry: the presets, their discovery and the agents table."""

import dataclasses
import json
import os
import sys
import textwrap

import pytest

from zoo.configuration import agent_registry

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAPER = ('QR-DQN-1', 'QR-DQN-0', 'CR-DQN', 'NC-CR-DQN', 'NC-QR-DQN-1',
         'NC-QR-DQN-0')


def test_the_packages_define_the_papers_variants():
  presets = agent_registry.presets()
  assert set(PAPER) <= set(presets)
  assert agent_registry.agent_packages() == ('cr_dqn', 'iqn', 'nc_cr_dqn',
                                             'nc_qr_dqn', 'qr_dqn')
  # The definitions of the paper (head, loss, κ, gradient scaling).
  got = {name: (p.package, p.head, p.loss, p.huber_param, p.scale_grad)
         for name, p in presets.items()}
  assert got['QR-DQN-1'] == ('qr_dqn', 'fc', 'qr', 1.0, False)
  assert got['QR-DQN-0'] == ('qr_dqn', 'fc', 'qr', 0.0, False)
  assert got['CR-DQN'][:3] == ('cr_dqn', 'fc', 'cramer')
  assert got['NC-CR-DQN'][:3] == ('nc_cr_dqn', 'nc', 'cramer')
  assert got['NC-QR-DQN-1'] == ('nc_qr_dqn', 'nc', 'qr', 1.0, False)
  assert got['NC-QR-DQN-0'] == ('nc_qr_dqn', 'nc', 'qr', 0.0, True)
  # The smoothed Cramér loss, at the width the synthetic experiment chose.
  assert got['CR-DQN-MQ'][:3] == ('cr_dqn', 'fc', 'multiquadric_cramer')
  assert presets['CR-DQN-MQ'].smoothing_width == 0.003
  assert presets['CR-DQN'].smoothing_width == 0.0
  # Sampled levels: DQN Zoo's IQN and the unbiased Cramér loss.
  assert got['IQN'] == ('iqn', 'iqn', 'sampled_qr', 1.0, False)
  assert got['CR-IQN'][:3] == ('iqn', 'iqn', 'sampled_cramer')
  assert [agent_registry.default_preset(p).name for p in agent_registry.agent_packages()] == [
      'CR-DQN', 'IQN', 'NC-CR-DQN', 'NC-QR-DQN-1', 'QR-DQN-1']


def test_pick_defaults_and_refuses_an_unknown_name_listing_the_presets():
  presets = agent_registry.package_presets('qr_dqn')
  assert agent_registry.pick(presets, 'QR-DQN-1', None).name == 'QR-DQN-1'
  assert agent_registry.pick(presets, 'QR-DQN-1', 'QR-DQN-0').huber_param == 0.0
  with pytest.raises(ValueError, match=r"Unknown preset 'CR-DQN'; this agent "
                     r'runs QR-DQN-1, QR-DQN-0 \(--preset=NAME\)\.'):
    agent_registry.pick(presets, 'QR-DQN-1', 'CR-DQN')


def test_inconsistent_presets_are_refused():
  preset = agent_registry.AgentPreset
  good = preset('A', 'a', 'fc', 'qr', False, 'x')
  assert good.huber_param == 1.0 and good.smoothing_width == 0.0
  with pytest.raises(ValueError, match="Preset A: loss 'iqn' is not one of"):
    preset('A', 'a', 'fc', 'iqn', False, 'x')
  with pytest.raises(ValueError, match="Preset A: head 'mlp' is not one of"):
    preset('A', 'a', 'mlp', 'qr', False, 'x')
  with pytest.raises(ValueError, match='huber_param must be >= 0'):
    preset('A', 'a', 'fc', 'qr', False, 'x', huber_param=-1.0)
  with pytest.raises(ValueError, match='that loss needs smoothing_width > 0'):
    preset('A', 'a', 'fc', 'multiquadric_cramer', False, 'x')
  with pytest.raises(ValueError, match='only --loss=multiquadric_cramer reads '
                     'it; it must be 0 with the others'):
    preset('A', 'a', 'fc', 'cramer', False, 'x', smoothing_width=0.01)
  with pytest.raises(ValueError, match="names package 'a'; it must be 'b'"):
    agent_registry.check_package('b', (good,), 'A')
  with pytest.raises(ValueError, match="DEFAULT_PRESET 'B' is not one"):
    agent_registry.check_package('a', (good,), 'B')
  with pytest.raises(ValueError, match='duplicate preset names'):
    agent_registry.check_package('a', (good, good), 'A')


def test_a_new_agent_is_one_folder(tmp_path, monkeypatch):
  """A package with an agent.py anywhere on the path joins the registry."""
  package = tmp_path / 'my_cr_dqn'
  package.mkdir()
  (package / '__init__.py').write_text('')
  (package / 'agent.py').write_text(textwrap.dedent('''
      from zoo.configuration.agent_registry import AgentPreset
      PRESETS = (AgentPreset('MY-CR-DQN', 'my_cr_dqn', head='nc',
                             loss='cramer', huber_param=1.0, scale_grad=True,
                             summary='A throwaway agent.'),)
      DEFAULT_PRESET = 'MY-CR-DQN'
      '''))
  monkeypatch.syspath_prepend(str(tmp_path))
  packages = agent_registry.agent_packages([ROOT, str(tmp_path)])
  assert 'my_cr_dqn' in packages
  presets = agent_registry.presets(packages)
  assert presets['MY-CR-DQN'].package == 'my_cr_dqn'
  assert set(PAPER) <= set(presets)
  # The runner takes it like any other: its settings resolve from the preset.
  from zoo.suites import minatar_suite  # pylint: disable=g-import-not-at-top
  from zoo.configuration import settings  # pylint: disable=g-import-not-at-top
  s = settings.resolve_settings(minatar_suite.MINATAR,
                                agent_registry.default_preset('my_cr_dqn'),
                                {'num_quantiles': 51})
  assert (s.agent, s.head, s.loss, s.scale_grad) == ('my_cr_dqn', 'nc',
                                                     'cramer', True)
  assert s.optimizer_epsilon == pytest.approx(0.01 / 32 * 2 / 51)
  assert s.results_csv_path.startswith('runs/minatar/my_cr_dqn/')
  assert '| MY-CR-DQN | `my_cr_dqn` | NC | Cramér |' in agent_registry.markdown_table(
      presets.values())
  sys.modules.pop('my_cr_dqn.agent', None)
  sys.modules.pop('my_cr_dqn', None)


def test_the_readme_shows_the_agents_table():
  with open(os.path.join(ROOT, 'README.md'), encoding='utf-8') as f:
    readme = f.read()
  table = agent_registry.markdown_table(agent_registry.presets().values())
  assert table in readme, (
      'README.md must contain the agents table; paste the output of\n'
      '  python -c "from zoo.configuration import agent_registry; '
      'print(agent_registry.markdown_table('
      'agent_registry.presets().values()))"\n' + table)


def test_a_runs_settings_name_its_preset():
  for name, preset in agent_registry.presets().items():
    settings = {'agent': preset.package, 'seed': 3, **{
        f.name: getattr(preset, f.name) for f in dataclasses.fields(preset)
        if f.name not in ('name', 'package', 'summary')}}
    assert agent_registry.preset_of(preset.package, settings) == name
  run = os.path.join(ROOT, 'evidence', 'sessions', '2026-11-27-cpu-atari100k',
                     'runs', 'CR-DQN', 'cr_dqn', 'kung_fu_master', 'seed_1',
                     'run.json')
  with open(run) as f:
    settings = json.load(f)['settings']
  assert agent_registry.preset_of('cr_dqn', settings) == 'CR-DQN'
  # Another κ is no preset; nor is a package that is not an agent's.
  qr = dict(settings, loss='qr', huber_param=0.5)
  assert agent_registry.preset_of('qr_dqn', qr) is None
  assert agent_registry.preset_of('no_such_agent', settings) is None
