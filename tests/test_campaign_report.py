"""Tests for scripts.campaign.report: a partial MinAtar study's report."""

import csv
import json
import os
import subprocess
import sys

import pytest

from scripts.campaign import campaigns
from scripts.campaign import report
from tests import without_minatar
from tests.test_analysis_minatar_report import write_fake_run

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
STUDY = {'suite': 'minatar', 'flags': ['--num_iterations=2'], 'blocks': [
    {'agent': 'qr_dqn', 'preset': 'QR-DQN-1', 'games': ['breakout'],
     'seeds': [1], 'group': 'QR-DQN-1'},
    {'agent': 'cr_dqn', 'preset': 'CR-DQN', 'games': ['breakout'],
     'seeds': [1], 'group': 'CR-DQN'},
    {'agent': 'cr_dqn', 'preset': 'CR-DQN', 'games': ['breakout'],
     'seeds': [1], 'flags': ['--num_envs=8'], 'group': 'CR-DQN-K8',
     'label': 'CR-DQN-K8'}]}


def test_report_of_a_partial_study(tmp_path):
  """One complete run, one incomplete run, the K-stream run missing."""
  root = str(tmp_path / 'runs')
  runs = campaigns.expand(STUDY)
  for run, finals in zip(runs, ([0.4, 1.0], [0.4, 2.0, 5.0])):
    write_fake_run(run.csv_paths(root)[0], run.agent, 1, finals,
                   steps_per_iteration=100_000)
  out = tmp_path / 'out'
  report.write(runs, root, str(out), reps=100, random_steps=2000,
               machine='test machine')
  with open(out / 'final_scores.csv') as f:
    rows = list(csv.DictReader(f))
  assert [(r['configuration'], r['final_mean']) for r in rows] == [
      ('CR-DQN', '5')]
  text = (out / 'report.md').read_text()
  assert '1 of 3 planned runs complete' in text
  assert '| QR-DQN-1 | breakout | 1 | incomplete | 1 |' in text
  assert '| CR-DQN-K8 | breakout | 1 | missing |  |' in text
  assert 'machine: test machine' in text
  assert '## CR-DQN - QR-DQN-1 per game' in text
  assert os.path.getsize(out / 'curves.png') > 5000


def test_a_report_without_runs_or_minatar_names_the_fix(tmp_path):
  path = tmp_path / 'study.json'
  path.write_text(json.dumps(STUDY))
  args = [sys.executable, '-m', 'scripts.campaign', f'--campaign={path}',
          f'--root_dir={tmp_path / "runs"}', f'--report={tmp_path / "out"}']
  result = subprocess.run(args, cwd=REPO, capture_output=True, text=True,
                          timeout=120)
  assert result.returncode == 1
  assert 'Pass the --root_dir the campaign ran in' in result.stderr
  result = subprocess.run(args, cwd=REPO, capture_output=True, text=True,
                          timeout=120,
                          env=without_minatar.environment(tmp_path, REPO))
  without_minatar.assert_refused(result)
  assert not (tmp_path / 'out').exists()


def test_a_campaign_without_minatar_runs_is_refused(tmp_path):
  with pytest.raises(ValueError, match='reads MinAtar runs'):
    report.write(campaigns.expand(campaigns.load('atari57_variants')),
                 str(tmp_path), str(tmp_path / 'out'))
  assert not (tmp_path / 'out').exists()
