"""scripts.experiments.sweep and GPUs: which GPU each run sees, and its JAX memory share.

No GPU is needed: the runs are a stand-in command that records the
environment it was started with.
"""

import json
import os
import subprocess
import sys
import types

import pytest

from scripts.experiments import sweep
from tests.test_experiments_sweep import FakeRay

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RECORDED = ('CUDA_VISIBLE_DEVICES', 'XLA_PYTHON_CLIENT_MEM_FRACTION',
            'XLA_PYTHON_CLIENT_PREALLOCATE')

# A stand-in run: records the variables above, overlapping with the others.
ENV_RUN = f'''
import json, os, sys, time
time.sleep(0.3)
with open(sys.argv[1], 'w') as f:
  json.dump({{k: os.environ.get(k) for k in {RECORDED!r}}}, f)
'''


@pytest.fixture
def env_template(tmp_path, monkeypatch):
  for name in sweep.JAX_MEMORY_VARIABLES + ('CUDA_VISIBLE_DEVICES',):
    monkeypatch.delenv(name, raising=False)
  script = tmp_path / 'env_run.py'
  script.write_text(ENV_RUN)
  return f'{{python}} {script} {{run_dir}}/env.json'


def recorded(spec):
  with open(os.path.join(spec.run_dir, 'env.json')) as f:
    return json.load(f)


def test_visible_gpus_from_the_flag_the_environment_or_nvidia_smi():
  no_smi = lambda name: None  # pylint: disable=unnecessary-lambda-assignment
  assert sweep.visible_gpus('0,2', {}, no_smi) == (['0', '2'], '--gpus')
  assert sweep.visible_gpus('none', {'CUDA_VISIBLE_DEVICES': '0'},
                            no_smi) == ([], '--gpus=none')
  assert sweep.visible_gpus('auto', {'CUDA_VISIBLE_DEVICES': '2,3'},
                            no_smi) == (['2', '3'], 'CUDA_VISIBLE_DEVICES')
  # The sweep's CUDA_VISIBLE_DEVICES hides every GPU: so do the runs'.
  assert sweep.visible_gpus('auto', {'CUDA_VISIBLE_DEVICES': ''},
                            no_smi)[0] == []
  smi = types.SimpleNamespace(returncode=0, stdout='0\n1\n2\n3\n')
  assert sweep.visible_gpus(
      'auto', {}, lambda name: '/usr/bin/nvidia-smi',
      lambda *a, **k: smi) == (['0', '1', '2', '3'], 'nvidia-smi')
  gpus, source = sweep.visible_gpus('auto', {}, no_smi)
  assert gpus == [] and 'none found' in source


def test_a_run_on_a_shared_gpu_gets_its_share_of_the_memory():
  assert sweep.memory_environment(0.25, {}) == {
      'XLA_PYTHON_CLIENT_MEM_FRACTION': '0.225'}
  assert sweep.memory_environment(1, {}) == {}   # A whole GPU: JAX's default.
  assert sweep.memory_environment(0, {}) == {}   # No GPU.
  # A memory setting of the user's is inherited, not overridden.
  assert sweep.memory_environment(
      0.5, {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}) == {}
  slots = sweep.local_slots(4, ['0', '1'], {})
  assert [s['CUDA_VISIBLE_DEVICES'] for s in slots] == ['0', '1', '0', '1']
  assert {s['XLA_PYTHON_CLIENT_MEM_FRACTION'] for s in slots} == {'0.45'}
  assert sweep.local_slots(2, ['0', '1'], {}) == [
      {'CUDA_VISIBLE_DEVICES': '0'}, {'CUDA_VISIBLE_DEVICES': '1'}]
  assert {s['XLA_PYTHON_CLIENT_MEM_FRACTION']
          for s in sweep.local_slots(3, ['0'], {})} == {'0.3'}
  assert sweep.local_slots(2, [], {}) == [{}, {}]


def test_local_parallel_spreads_the_runs_over_the_gpus(tmp_path, env_template,
                                                       capsys):
  specs = sweep.expand(['cr_dqn'], ['pong', 'breakout'], [1, 2],
                       str(tmp_path / 'runs'), [], env_template)
  results = sweep.run_local(specs, parallel=4, gpus=['0', '1'],
                            gpu_source='--gpus')
  assert set(results.values()) == {0}
  seen = [recorded(spec) for spec in specs]
  assert sorted(r['CUDA_VISIBLE_DEVICES'] for r in seen) == ['0', '0', '1',
                                                             '1']
  assert {r['XLA_PYTHON_CLIENT_MEM_FRACTION'] for r in seen} == {'0.45'}
  out = capsys.readouterr().out
  assert ('GPUs: 0,1 (from --gpus); 4 run(s) at a time, at most 2 per GPU, '
          'each with XLA_PYTHON_CLIENT_MEM_FRACTION=0.45.') in out
  for spec, env in zip(specs, seen):
    assert f'{spec.name}: GPU {env["CUDA_VISIBLE_DEVICES"]}' in out
    # run.log records the variables with the command, ready to rerun by hand.
    with open(os.path.join(spec.run_dir, sweep.LOG_FILE)) as f:
      header = f.readline()
    assert (f'CUDA_VISIBLE_DEVICES={env["CUDA_VISIBLE_DEVICES"]} '
            'XLA_PYTHON_CLIENT_MEM_FRACTION=0.45 ') in header


def test_one_run_per_gpu_keeps_jax_defaults(tmp_path, env_template):
  specs = sweep.expand(['cr_dqn'], ['pong', 'breakout'], [1],
                       str(tmp_path / 'runs'), [], env_template)
  sweep.run_local(specs, parallel=2, gpus=['3', '5'])
  seen = [recorded(spec) for spec in specs]
  assert sorted(r['CUDA_VISIBLE_DEVICES'] for r in seen) == ['3', '5']
  assert all(r['XLA_PYTHON_CLIENT_MEM_FRACTION'] is None for r in seen)


def test_without_gpus_the_runs_environment_is_the_sweeps(tmp_path,
                                                         env_template, capsys):
  specs = sweep.expand(['cr_dqn'], ['pong'], [1, 2], str(tmp_path / 'runs'),
                       [], env_template)
  sweep.run_local(specs, parallel=2)
  assert all(recorded(s) == dict.fromkeys(RECORDED) for s in specs)
  assert 'GPU' not in capsys.readouterr().out


def test_ray_runs_with_a_fraction_of_a_gpu_get_that_share(
    tmp_path, env_template, monkeypatch, capsys):
  fake_ray = FakeRay()
  monkeypatch.setitem(sys.modules, 'ray', fake_ray)
  specs = sweep.expand(['cr_dqn'], ['pong'], [1, 2], str(tmp_path / 'runs'),
                       [], env_template)
  sweep.run_ray(specs, 'auto', cpus_per_run=2, gpus_per_run=0.25)
  assert fake_ray.resources == {'num_cpus': 2, 'num_gpus': 0.25}
  # Ray itself sets CUDA_VISIBLE_DEVICES in a task; the sweep the memory.
  assert [recorded(s)['XLA_PYTHON_CLIENT_MEM_FRACTION'] for s in specs] == [
      '0.225', '0.225']
  assert ('--gpus_per_run=0.25: each run with '
          'XLA_PYTHON_CLIENT_MEM_FRACTION=0.225.') in capsys.readouterr().out
  specs = sweep.expand(['cr_dqn'], ['breakout'], [1], str(tmp_path / 'runs'),
                       [], env_template)
  sweep.run_ray(specs, 'auto', cpus_per_run=2, gpus_per_run=1)
  assert recorded(specs[0])['XLA_PYTHON_CLIENT_MEM_FRACTION'] is None


def test_cli_takes_the_gpus_from_cuda_visible_devices(tmp_path, env_template):
  root = tmp_path / 'runs'
  env = dict(os.environ, CUDA_VISIBLE_DEVICES='4,6')
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.sweep', '--agents=cr_dqn',
       '--games=pong,breakout,seaquest', '--seeds=1', f'--root_dir={root}',
       '--parallel=3', f'--command_template={env_template}'],
      cwd=REPO, env=env, capture_output=True, text=True, timeout=120)
  # The stand-in writes no CSV: the runs end "failed", which is beside the
  # point here.
  assert ('GPUs: 4,6 (from CUDA_VISIBLE_DEVICES); 3 run(s) at a time, at '
          'most 2 per GPU, each with XLA_PYTHON_CLIENT_MEM_FRACTION=0.45.'
          ) in result.stdout, result.stderr
  devices = sorted(
      recorded(types.SimpleNamespace(run_dir=str(root / 'cr_dqn' / g /
                                                 'seed_1')))
      ['CUDA_VISIBLE_DEVICES'] for g in ('pong', 'breakout', 'seaquest'))
  assert devices == ['4', '4', '6']
