"""Tests for zoo.storage.run_json: settings beside the CSV, absent for older runs."""

import json

import pytest

from zoo.storage import run_json


def test_written_beside_the_csv_and_read_back(tmp_path):
  csv_path = str(tmp_path / 'seed_1' / 'results.csv')
  settings = {'environment_name': 'pong', 'learning_rate': 5e-5,
              'optimizer_epsilon': None}
  path = run_json.write(csv_path, 'cr_dqn', 'atari', settings)
  assert path == str(tmp_path / 'seed_1' / 'run.json')
  expected = {'agent': 'cr_dqn', 'suite': 'atari',
              'settings': dict(settings, agent='cr_dqn', suite='atari')}
  with open(path) as f:
    assert json.load(f) == expected
  assert run_json.read(str(tmp_path / 'seed_1')) == expected  # A directory.
  assert run_json.read(path) == expected  # The file.


def test_runs_without_one_read_as_none(tmp_path):
  assert run_json.read(str(tmp_path)) is None
  assert run_json.read(str(tmp_path / 'run.json')) is None


def test_a_file_that_is_not_a_run_json_is_refused_by_name(tmp_path):
  path = tmp_path / 'run.json'
  path.write_text('{not json')
  with pytest.raises(ValueError, match=r'run\.json is not JSON'):
    run_json.read(str(path))
  path.write_text('{"agent": "cr_dqn"}')
  with pytest.raises(ValueError, match='no "settings" object'):
    run_json.read(str(tmp_path))
