"""The campaign page's SLURM recipe writes the job array it says it writes."""

import os
import re
import shlex
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGE = os.path.join(REPO, 'docs', 'campaign.md')


def documented_command() -> list:
  """Return the arguments of the command under <!-- slurm-campaign -->."""
  with open(PAGE, encoding='utf-8') as f:
    text = f.read()
  block = re.search(r'<!-- slurm-campaign -->\n```bash\n(.*?)```', text, re.S)
  assert block, 'docs/campaign.md lost its SLURM command'
  args = shlex.split(block.group(1).replace('\\\n', ' '))
  assert args[:3] == ['python', '-m', 'scripts.campaign']
  return args[3:]


def campaign(args, cwd=REPO):
  result = subprocess.run([sys.executable, '-m', 'scripts.campaign', *args],
                          cwd=cwd, capture_output=True, text=True,
                          timeout=300)
  assert result.returncode == 0, result.stderr
  return result.stdout


def test_the_slurm_recipe_writes_one_array_task_per_run(tmp_path):
  root = tmp_path / 'runs'
  args = [a for a in documented_command() if not a.startswith('--root_dir=')]
  out = campaign(args + [f'--root_dir={root}'])
  script = root / 'slurm' / 'atari57.sbatch'
  assert f'sbatch {script}' in out
  lines = script.read_text().splitlines()
  assert '#SBATCH --array=0-170%32' in lines
  for option in ('--gres=gpu:1', '--cpus-per-task=8', '--mem=12G',
                 '--time=12:00:00'):
    assert f'#SBATCH {option}' in lines
  task = shlex.split(lines[-1])
  assert task[:3] == [sys.executable, '-m', 'scripts.campaign']
  assert task[-1] == '--run_index=$SLURM_ARRAY_TASK_ID'
  assert {'--campaign=atari57', '--flags=--num_envs=64',
          '--budget_minutes=710', f'--root_dir={root}'} <= set(task)
  assert not any(a.startswith(('--backend', '--parallel', '--slurm_option'))
                 for a in task)
  # Task 5 runs the campaign's sixth run alone, with the recipe's flags.
  out = campaign(task[3:-1] + ['--run_index=5', '--dry_run'])
  commands = [shlex.split(line) for line in out.splitlines()
              if line.startswith(sys.executable)]
  assert len(commands) == 1
  command = commands[0]
  assert command[1:3] == ['-m', 'cr_dqn.run_atari']
  assert command[-1] == '--num_envs=64'
  run_dir = root.resolve() / 'atari57' / 'cr_dqn'
  assert command[4] == '--seed=3' and command[3].startswith(
      '--environment_name=')
  assert command[5].startswith(f'--results_csv_path={run_dir}/')
  assert not any(root.rglob('results.csv'))
