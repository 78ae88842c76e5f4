"""Pack a campaign's results, ingest them elsewhere, refuse foreign files."""

import io
import tarfile

import pytest

from scripts.campaign import archive
from scripts.campaign import run_record as run_lib


def test_pack_then_ingest_keeps_the_longer_csv(tmp_path):
  run = run_lib.Run('cr_dqn', 'atari', 'pong', (1,))
  here, there = tmp_path / 'here', tmp_path / 'there'
  folder = here / 'cr_dqn' / 'pong' / 'seed_1'
  (folder / 'checkpoints').mkdir(parents=True)
  (folder / 'checkpoints' / 'tree.npz').write_text('big')
  (folder / 'results.csv').write_text('iteration\n0\n1\n')
  (folder / 'run.json').write_text('{}')
  path = str(tmp_path / 'a.tar.gz')
  assert archive.pack([run], str(here), path) == 2
  assert archive.ingest(path, str(there)) == 2
  theirs = there / 'cr_dqn' / 'pong' / 'seed_1'
  assert (theirs / 'results.csv').read_text() == 'iteration\n0\n1\n'
  assert not (theirs / 'checkpoints').exists()
  (theirs / 'results.csv').write_text('iteration\n0\n1\n2\n')
  assert archive.ingest(path, str(there)) == 0  # Holds more already.


def test_ingest_refuses_what_is_not_a_runs_file(tmp_path):
  path = tmp_path / 'bad.tar.gz'
  with tarfile.open(path, 'w:gz') as tar:
    data = b'x'
    info = tarfile.TarInfo('../outside/results.csv')
    info.size = len(data)
    tar.addfile(info, io.BytesIO(data))
  with pytest.raises(ValueError, match='not a campaign archive'):
    archive.ingest(str(path), str(tmp_path / 'root'))
  assert not (tmp_path / 'outside').exists()
