"""The campaign page's SLURM recipe makes the command lines it says it makes."""

import os
import re
import shlex
import subprocess
import sys

from scripts.experiments import sweep

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, 'docs', 'campaign.md')


def documented_sweep() -> list:
  """Return the arguments of the sweep command under <!-- slurm-sweep -->."""
  with open(PAGE, encoding='utf-8') as f:
    text = f.read()
  block = re.search(r'<!-- slurm-sweep -->\n```bash\n(.*?)```', text, re.S)
  assert block, 'docs/campaign.md lost its SLURM command'
  args = shlex.split(block.group(1).replace('\\\n', ' '))
  assert args[:3] == ['python', '-m', 'scripts.experiments.sweep']
  return args[3:]


def test_the_slurm_recipe_makes_one_srun_per_run(tmp_path):
  args = [a for a in documented_sweep() if not a.startswith('--root_dir=')]
  root = tmp_path / 'runs'
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.experiments.sweep', f'--root_dir={root}',
       '--dry_run'] + args, cwd=REPO, capture_output=True, text=True,
      timeout=120)
  assert result.returncode == 0, result.stderr
  lines = result.stdout.splitlines()
  assert lines[0] == ('171 runs: 0 done, running or failed (skipped), 171 to '
                      'launch.')
  commands = [shlex.split(line) for line in lines[1:]]
  assert len(commands) == 171
  run_dir = root.resolve() / 'cr_dqn' / 'pong' / 'seed_2'
  assert [
      'srun', '--job-name=cr_dqn-pong-2', '--gres=gpu:1', '--cpus-per-task=8',
      '--mem=12G', '--time=12:00:00', sys.executable, '-m',
      'cr_dqn.run_atari', '--environment_name=pong', '--seed=2',
      f'--results_csv_path={run_dir / "results.csv"}',
      f'--checkpoint_dir={run_dir / "checkpoints"}', '--num_envs=64',
  ] in commands
  for command in commands:
    # srun's options come before the program, the run's flags after it.
    assert command[0] == 'srun' and command[6] == sys.executable
    assert command[-1] == '--num_envs=64'
  assert len({c[1] for c in commands}) == 171  # One job name per run.
  assert not root.exists() or not any(root.rglob('results.csv'))


def test_the_slurm_recipe_leaves_the_gpus_to_slurm():
  args = documented_sweep()
  assert '--gpus=none' in args
  gpus, _ = sweep.visible_gpus('none', {'CUDA_VISIBLE_DEVICES': '0,1'})
  assert gpus == [] and sweep.local_slots(32, gpus, {}) == [{}] * 32
