"""Every run's flags are checked as the run parses them, before any starts."""

import os
import subprocess
import sys

import pytest

from scripts.campaign import campaigns
from scripts.campaign import check
from scripts.campaign import run_record

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_the_recipes_pass():
  for name in ('atari57_variants', 'minatar_study', 'minatar_study_jitted'):
    check.check(campaigns.expand(campaigns.load(name)), '/runs')


@pytest.mark.parametrize('flags, message', [
    (('--num_env=64',), 'num_env'),
    (('--num_envs=many',), 'num_envs'),
    (('--preset=CR-IQN',), 'CR-IQN'),
    (('--protocol=atari100k',), 'atari100k'),
    (('extra',), 'unexpected arguments'),
])
def test_a_bad_flag_is_one_error_naming_the_run(flags, message):
  run = run_record.Run('cr_dqn', 'minatar', 'breakout', (1,), flags)
  with pytest.raises(ValueError, match=message) as raised:
    check.check([run], '/runs')
  assert str(raised.value).startswith('cr_dqn/breakout/seed_1: ')


def test_the_cli_checks_before_launching(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.campaign', '--campaign=minatar',
       f'--root_dir={tmp_path}', '--flags=--num_env=8'], cwd=REPO,
      capture_output=True, text=True, timeout=120)
  assert result.returncode == 1
  assert result.stderr.startswith('Error: minatar/cr_dqn/asterix/seed_1: ')
  assert 'num_env' in result.stderr and not any(tmp_path.iterdir())
