"""The launcher runs, stops and resumes campaigns (a fake run: no JAX)."""

import json
import os
import subprocess
import sys
import time
import types

import pytest

from scripts.campaign import budget
from scripts.campaign import campaigns
from scripts.campaign import launch
from scripts.campaign import status
from zoo.storage import run_directory

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# A run as the launcher sees it: one CSV row per iteration, resumed from
# the rows written, SIGTERM handled at the next row (exit 143).
FAKE_RUN = '''
import os, signal, sys, time
args = dict(a[2:].split('=', 1) for a in sys.argv[1:])
path, stop = args['results_csv_path'], []
signal.signal(signal.SIGTERM, lambda *_: stop.append(1))
os.makedirs(os.path.dirname(path), exist_ok=True)
if not os.path.exists(path):
  open(path, 'w').write('iteration\\n')
start = len(open(path).read().splitlines()) - 1
print('resumed at', start, 'gpu', os.environ.get('CUDA_VISIBLE_DEVICES'))
for i in range(start, int(args['num_iterations']) + 1):
  time.sleep(float(args.get('sleep', '0.05')))
  if stop:
    sys.exit(143)
  if i == int(args.get('fail_at', '-1')):
    sys.exit(3)
  open(path, 'a').write(f'{i}\\n')
'''


@pytest.fixture
def fake(tmp_path, monkeypatch):
  package = tmp_path / 'lib' / 'fake_agent'
  package.mkdir(parents=True)
  (package / '__init__.py').write_text('')
  (package / 'run_minatar.py').write_text(FAKE_RUN)
  path = f'{tmp_path / "lib"}{os.pathsep}{REPO}'
  monkeypatch.setenv('PYTHONPATH', path)
  return path


def fake_campaign(*flags, seeds=(1, 2, 3)):
  return {'suite': 'minatar', 'flags': ['--num_iterations=3', *flags],
          'blocks': [{'agent': 'fake_agent', 'games': ['breakout'],
                      'seeds': list(seeds)}]}


def rows(run, root):
  with open(run.csv_paths(root)[0]) as f:
    return f.read().split()


def test_runs_in_parallel_then_skips_what_is_done(tmp_path, fake):
  runs = campaigns.expand(fake_campaign())
  root = str(tmp_path / 'runs')
  said = []
  assert launch.run_local(runs, root, 2, say=said.append, poll_s=0.02) == {
      r.name: 0 for r in runs}
  assert [status.of(r, root).state for r in runs] == [status.DONE] * 3
  assert status.to_launch(runs, root) == []
  log = open(os.path.join(runs[0].home(root), 'run.log')).read()
  assert 'fake_agent.run_minatar --environment_name=breakout --seed=1' in log
  assert json.load(open(os.path.join(runs[0].home(root), 'exit.json')))[
      'returncode'] == 0
  assert len(said) == 3


def test_the_deadline_cuts_runs_and_the_next_invocation_finishes_them(
    tmp_path, fake):
  runs = campaigns.expand(fake_campaign('--sleep=0.3', seeds=(1,)))
  root = str(tmp_path / 'runs')
  codes = launch.run_local(runs, root, 1, deadline=budget.Deadline(0.01),
                           say=print, poll_s=0.02)
  assert codes == {runs[0].name: 143}
  assert status.of(runs[0], root).state == status.CUT
  assert 0 < len(rows(runs[0], root)) - 1 < 4
  # A campaign started past its deadline starts nothing.
  late = budget.Deadline(1e-9)
  assert launch.run_local(runs, root, 1, deadline=late, say=print) == {
      runs[0].name: None}
  launch.run_local(status.to_launch(runs, root), root, 1, poll_s=0.02)
  assert rows(runs[0], root) == ['iteration', '0', '1', '2', '3']
  assert status.of(runs[0], root).state == status.DONE


def test_a_run_taken_by_another_invocation_since_the_plan_is_not_started(
    tmp_path, fake):
  """Two campaigns on one root: each run starts once, whoever comes first."""
  runs = campaigns.expand(fake_campaign(seeds=(1, 2, 3)))
  root = str(tmp_path / 'runs')
  plan = status.to_launch(runs, root)
  assert plan == runs
  launch.run_local(runs[:1], root, 1, poll_s=0.02)  # Done by another.
  said = []
  with run_directory.held(runs[1].seed_dirs(root)):  # Running elsewhere.
    codes = launch.run_local(plan, root, 1, say=said.append, poll_s=0.02)
  assert codes == {runs[0].name: None, runs[1].name: None, runs[2].name: 0}
  assert f'[1/3] {runs[0].name}: not started (done)' in said
  assert f'[2/3] {runs[1].name}: not started (running)' in said
  log = open(os.path.join(runs[0].home(root), 'run.log')).read()
  assert log.count('fake_agent.run_minatar') == 1
  assert not os.path.exists(os.path.join(runs[1].home(root), 'run.log'))


def test_failed_runs_are_retried_unless_told_not_to(tmp_path, fake):
  runs = campaigns.expand(fake_campaign('--fail_at=2', seeds=(1,)))
  root = str(tmp_path / 'runs')
  assert launch.run_local(runs, root, 1, poll_s=0.02) == {runs[0].name: 3}
  assert status.of(runs[0], root).state == status.FAILED
  assert status.to_launch(runs, root, retry_failed=False) == []
  assert status.to_launch(runs, root) == runs


def test_gpus_slots_and_memory_shares():
  assert launch.visible_gpus('auto', {'CUDA_VISIBLE_DEVICES': '0,1'}) == [
      '0', '1']
  assert launch.visible_gpus('none', {'CUDA_VISIBLE_DEVICES': '0'}) == []
  assert launch.visible_gpus('auto', {}, which=lambda _: None) == []
  listed = types.SimpleNamespace(returncode=0, stdout='0\n1\n2\n')
  assert launch.visible_gpus('auto', {}, which=lambda _: 'nvidia-smi',
                             run=lambda *a, **k: listed) == ['0', '1', '2']
  slots = launch.local_slots(4, ['0', '1'], {})
  assert [s['CUDA_VISIBLE_DEVICES'] for s in slots] == ['0', '1', '0', '1']
  assert slots[0]['XLA_PYTHON_CLIENT_MEM_FRACTION'] == '0.45'
  assert launch.local_slots(2, ['0', '1'], {}) == [
      {'CUDA_VISIBLE_DEVICES': '0'}, {'CUDA_VISIBLE_DEVICES': '1'}]
  assert launch.memory_environment(
      0.5, {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}) == {}


def test_each_run_sees_its_slots_gpu(tmp_path, fake):
  runs = campaigns.expand(fake_campaign())
  root = str(tmp_path / 'runs')
  launch.run_local(runs, root, 2, gpus=['7'], say=print, poll_s=0.02)
  for run in runs:
    assert 'gpu 7' in open(os.path.join(run.home(root), 'run.log')).read()


def test_ray_runs_one_task_per_run_with_its_resources(tmp_path, fake,
                                                      monkeypatch):
  declared = []

  class Ref:
    def __init__(self, value):
      self.value = value

  class FakeRay:
    def init(self, address):
      assert address == 'auto'

    def remote(self, **resources):
      declared.append(resources)
      return lambda fn: types.SimpleNamespace(
          remote=lambda *a: Ref(fn(*a)))

    def wait(self, refs, num_returns):
      return refs[:num_returns], refs[num_returns:]

    def get(self, ref):
      return ref.value

  monkeypatch.setitem(sys.modules, 'ray', FakeRay())
  runs = campaigns.expand(fake_campaign(seeds=(1, 2)))
  root = str(tmp_path / 'runs')
  assert launch.run_ray(runs, root, 'auto', 4, 0.5, say=print) == {
      r.name: 0 for r in runs}
  assert declared == [{'num_cpus': 4, 'num_gpus': 0.5}]
  assert 'XLA_PYTHON_CLIENT_MEM_FRACTION=0.45' in open(
      os.path.join(runs[0].home(root), 'run.log')).read()


def cli(*args, env_path):
  return subprocess.run(
      [sys.executable, '-m', 'scripts.campaign', '--nocheck_runs', *args],
      cwd=REPO,
      capture_output=True, text=True, timeout=120,
      env=dict(os.environ, PYTHONPATH=env_path))


def test_cli_budget_status_resume_and_slurm(tmp_path, fake):
  path = tmp_path / 'fake.json'
  path.write_text(json.dumps(fake_campaign('--sleep=0.4', seeds=(1, 2))))
  root = tmp_path / 'runs'
  common = [f'--campaign={path}', f'--root_dir={root}']
  cut = cli(*common, '--parallel=2', '--budget_minutes=0.02', env_path=fake)
  assert cut.returncode == 0, cut.stderr
  assert '2 cut' in cut.stdout
  dry = cli(*common, '--dry_run', '--train_fps=1000', env_path=fake)
  assert dry.returncode == 0, dry.stderr
  assert '2 to launch' in dry.stdout and 'Estimate for the 2 runs' in dry.stdout
  assert dry.stdout.count('fake_agent.run_minatar') == 2
  done = cli(*common, '--parallel=2', env_path=fake)
  assert done.returncode == 0, done.stderr
  shown = cli(*common, '--status', env_path=fake)
  assert '2 done, 0 running, 0 cut' in shown.stdout
  slurm = cli(*common, '--backend=slurm', '--parallel=8',
              '--slurm_option=--gres=gpu:1', '--budget_minutes=600',
              env_path=fake)
  assert slurm.returncode == 0, slurm.stderr
  script = root / 'slurm' / 'fake.json.sbatch'
  assert f'sbatch {script}' in slurm.stdout
  text = script.read_text()
  assert '#SBATCH --array=0-1%8' in text and '#SBATCH --gres=gpu:1' in text
  assert '--budget_minutes=600' in text and '--run_index=' in text
  one = cli(*common, '--run_index=1', env_path=fake)
  assert one.returncode == 0 and '1 runs: 1 done' in one.stdout


def test_the_cli_loads_no_plotting_library_unless_it_writes_a_report():
  loaded = subprocess.run(
      [sys.executable, '-c', 'import sys; import scripts.campaign.__main__; '
       "print(sorted({'matplotlib', 'seaborn'} & set(sys.modules)))"],
      cwd=REPO, capture_output=True, text=True, timeout=120)
  assert loaded.stdout == '[]\n', loaded.stderr


@pytest.mark.parametrize('args, message', [
    ([], '--campaign is required'),
    (['--campaign=atari58'], 'Unknown campaign'),
    (['--campaign=atari57', '--run_index=171'], 'has 171 runs'),
    (['--campaign=atari57', '--flags=--protocol=dqn_zo'], 'unknown --protocol'),
    (['--campaign=atari57', '--budget_minutes=-1'], '--budget_minutes'),
])
def test_cli_bad_input_is_one_error_line(args, message, fake):
  result = cli(*args, env_path=fake)
  assert result.returncode == 1
  assert result.stderr.startswith('Error:') and message in result.stderr


def test_a_stopped_campaign_stops_its_runs_at_a_safe_point(tmp_path, fake):
  path = tmp_path / 'fake.json'
  path.write_text(json.dumps(fake_campaign('--sleep=0.5', '--num_iterations=50',
                                           seeds=(1, 2))))
  root = tmp_path / 'runs'
  campaign = subprocess.Popen(
      [sys.executable, '-m', 'scripts.campaign', '--nocheck_runs',
       f'--campaign={path}', f'--root_dir={root}', '--parallel=2'],
      cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True,
      env=dict(os.environ, PYTHONPATH=fake))
  csvs = [root / 'fake_agent' / 'breakout' / f'seed_{s}' / 'results.csv'
          for s in (1, 2)]
  deadline = time.time() + 60
  while not all(p.exists() and len(p.read_text().split()) > 1 for p in csvs):
    assert time.time() < deadline, 'the runs did not start'
    time.sleep(0.1)
  campaign.terminate()
  output, _ = campaign.communicate(timeout=60)
  assert campaign.returncode == 130, output
  assert '0 done, 0 running, 2 cut' in output
