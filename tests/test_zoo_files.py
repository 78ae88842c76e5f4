"""Tests of the atomic file writes."""

import csv
import os
import stat

import pytest

from zoo.storage import files


def test_writes_text_and_bytes_and_replaces_old_content(tmp_path):
  path = str(tmp_path / 'sub' / 'results.csv')
  files.write_atomically(path, 'a,b\r\n1,2\r\n')
  with open(path, newline='') as f:
    assert f.read() == 'a,b\r\n1,2\r\n'  # Line ends kept as given.
  files.write_atomically(path, b'\x89PNG')
  with open(path, 'rb') as f:
    assert f.read() == b'\x89PNG'
  assert stat.S_IMODE(os.stat(path).st_mode) == 0o644
  assert os.listdir(tmp_path / 'sub') == ['results.csv']


def test_a_failure_keeps_the_old_file_and_leaves_no_temp(tmp_path):
  path = str(tmp_path / 'results.csv')
  files.write_atomically(path, 'old')
  with pytest.raises(RuntimeError):
    with files.atomic_path(path) as tmp:
      with open(tmp, 'w') as f:
        f.write('half')
      raise RuntimeError('killed mid-write')
  with open(path) as f:
    assert f.read() == 'old'
  assert os.listdir(tmp_path) == ['results.csv']


def test_temporary_names_do_not_look_like_results(tmp_path):
  with files.atomic_path(str(tmp_path / 'results.csv')) as tmp:
    name = os.path.basename(tmp)
    assert name.startswith('.results.csv.') and name.endswith('.tmp')


def test_make_writable_directory_creates_and_probes(tmp_path):
  directory = str(tmp_path / 'a' / 'b')
  files.make_writable_directory(directory)
  assert os.listdir(directory) == []  # The probe is gone.
  blocker = tmp_path / 'file'
  blocker.write_text('x')
  with pytest.raises(OSError):
    files.make_writable_directory(str(blocker / 'c'))


def test_csv_rows_with_commas_and_quotes_parse_back(tmp_path):
  path = str(tmp_path / 'table.csv')
  rows = [{'label': 'FC, QR κ=1', 'value': '1.5'},
          {'label': 'say "hi"', 'value': ''}]
  files.write_csv_atomically(path, ['label', 'value'], rows)
  with open(path, newline='', encoding='utf-8') as f:
    assert list(csv.DictReader(f)) == rows


def test_fsync_path_flushes_files_and_directories_and_names_a_missing_one(
    tmp_path, monkeypatch):
  (tmp_path / 'a.txt').write_text('x')
  synced = []
  real_fsync = os.fsync
  monkeypatch.setattr(os, 'fsync',
                      lambda fd: synced.append(fd) or real_fsync(fd))
  files.fsync_path(str(tmp_path / 'a.txt'))
  files.fsync_path(str(tmp_path))
  assert len(synced) == 2
  with pytest.raises(FileNotFoundError):
    files.fsync_path(str(tmp_path / 'missing'))
