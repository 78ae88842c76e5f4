"""Tests for zoo.storage.checkpoint: atomic saves, replay chunks written once, load."""

import errno
import json
import os
import shutil

import numpy as np
import pytest

from tests import checkpoint_faults
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read


def _tree(value):
  return {'params': {'net/~/linear': {'w': np.full((2, 3), value, np.float32),
                                      'b': np.zeros(3, np.float32)}},
          'count': np.int64(value), 'key': np.array([1, value], np.uint32)}


def _steps(begin, end, num_streams=2):
  """Steps [begin, end) whose frames hold their step index."""
  index = np.arange(begin, end, dtype=np.int32)
  return [(begin, {
      'frames': np.broadcast_to(index[None, :, None], (num_streams, end - begin,
                                                       3)).astype(np.uint8),
      'actions': np.broadcast_to(index, (num_streams, end - begin)).copy()})]


def _replay_files(directory):
  return sorted(os.listdir(os.path.join(directory, checkpoint.REPLAY_DIR)))


def test_round_trip_and_the_two_newest_kept(tmp_path):
  directory = str(tmp_path / 'ckpt')
  assert checkpoint.latest(directory) is None
  for iteration in range(3):
    checkpoint.save(directory, iteration, {'iteration': iteration + 1,
                                           'rows': [{'x': float('nan')}]},
                    _tree(iteration), _steps(4 * iteration, 4 * iteration + 4))
  path = checkpoint.latest(directory)
  assert os.path.basename(path) == 'iteration_000002'
  assert sorted(os.listdir(directory)) == ['iteration_000001',
                                           'iteration_000002', 'replay']
  saved = checkpoint_read.load(path, _tree(0))
  assert saved.meta['iteration'] == 3 and np.isnan(saved.meta['rows'][0]['x'])
  np.testing.assert_array_equal(
      saved.tree['params']['net/~/linear']['w'], np.full((2, 3), 2.0))
  assert int(saved.tree['count']) == 2
  assert [b for b, _ in saved.replay_chunks] == [0, 4, 8]
  frames = np.concatenate([a['frames'] for _, a in saved.replay_chunks], 1)
  np.testing.assert_array_equal(frames[1, :, 0], np.arange(12))
  assert isinstance(saved.replay_chunks[0][1]['frames'], np.memmap)


def test_each_save_writes_only_the_new_steps(tmp_path):
  directory = str(tmp_path)
  checkpoint.save(directory, 0, {}, _tree(0), _steps(0, 5))
  first = os.path.join(directory, checkpoint.REPLAY_DIR,
                       'steps_000000000000_000000000005', 'frames.npy')
  written = os.stat(first).st_mtime_ns, os.stat(first).st_ino
  checkpoint.save(directory, 1, {}, _tree(1), _steps(5, 9))
  assert (os.stat(first).st_mtime_ns, os.stat(first).st_ino) == written
  assert _replay_files(directory) == ['steps_000000000000_000000000005',
                                      'steps_000000000005_000000000009']
  # Steps before keep_steps_from are overwritten in the replay: once
  # neither kept checkpoint uses their chunk, it is deleted.
  checkpoint.save(directory, 2, {}, _tree(2), _steps(9, 12), keep_steps_from=5)
  meta = checkpoint.load_meta(checkpoint.latest(directory))
  assert meta['replay_chunks'] == ['steps_000000000005_000000000009',
                                   'steps_000000000009_000000000012']
  assert _replay_files(directory) == ['steps_000000000000_000000000005'
                                      ] + meta['replay_chunks']
  checkpoint.save(directory, 3, {}, _tree(3), _steps(12, 13), keep_steps_from=9)
  assert _replay_files(directory) == ['steps_000000000005_000000000009',
                                      'steps_000000000009_000000000012',
                                      'steps_000000000012_000000000013']


def test_a_chunk_split_in_ring_pieces_is_one_file(tmp_path):
  pieces = _steps(7, 10) + _steps(10, 12)  # The ring wrapped at 10.
  checkpoint.save(str(tmp_path), 0, {}, _tree(0), pieces)
  saved = checkpoint_read.load(checkpoint.latest(str(tmp_path)), _tree(0))
  ((begin, arrays),) = saved.replay_chunks
  assert begin == 7
  np.testing.assert_array_equal(arrays['actions'],
                                np.tile(np.arange(7, 12), (2, 1)))


def test_steps_must_continue_the_previous_checkpoint(tmp_path):
  checkpoint.save(str(tmp_path), 0, {}, _tree(0), _steps(0, 4))
  with pytest.raises(ValueError, match='start at 6, the checkpoint .* at 4'):
    checkpoint.save(str(tmp_path), 1, {}, _tree(1), _steps(6, 8))
  with pytest.raises(ValueError, match='not consecutive'):
    checkpoint.save(str(tmp_path), 1, {}, _tree(1),
                    _steps(4, 6) + _steps(7, 8))


def test_what_a_killed_save_leaves_is_ignored_then_removed(tmp_path):
  directory = str(tmp_path)
  checkpoint.save(directory, 0, {}, _tree(0), _steps(0, 4))
  # A kill while writing iteration 1 leaves temps, a final-named directory
  # without meta.json, and maybe a complete chunk no checkpoint uses (its
  # steps may differ from the rerun's).
  os.makedirs(os.path.join(directory, '.tmp-iteration_000001-123'))
  os.makedirs(os.path.join(directory, 'iteration_000001'))
  os.makedirs(os.path.join(directory, 'replay', '.tmp-steps_x-123'))
  for name in ('steps_000000000004_000000000008',
               'steps_000000000004_000000000006'):
    os.makedirs(os.path.join(directory, 'replay', name))
    np.save(os.path.join(directory, 'replay', name, 'frames.npy'),
            np.full((2, 2, 3), 99, np.uint8))
  assert checkpoint.latest(directory).endswith('iteration_000000')
  stale = checkpoint_read.load(checkpoint.latest(directory), _tree(0))
  assert [b for b, _ in stale.replay_chunks] == [0]
  checkpoint.save(directory, 1, {}, _tree(1), _steps(4, 6))
  assert sorted(os.listdir(directory)) == ['iteration_000000',
                                           'iteration_000001', 'replay']
  assert _replay_files(directory) == ['steps_000000000000_000000000004',
                                      'steps_000000000004_000000000006']
  saved = checkpoint_read.load(checkpoint.latest(directory), _tree(0))
  np.testing.assert_array_equal(saved.replay_chunks[1][1]['frames'][0, :, 0],
                                [4, 5])


def test_mismatched_structure_is_refused(tmp_path):
  checkpoint.save(str(tmp_path), 0, {}, _tree(0))
  path = checkpoint.latest(str(tmp_path))
  with pytest.raises(ValueError, match='differently structured'):
    checkpoint_read.load(path, {'other': np.zeros(1)})
  bad = _tree(0)
  bad['params']['net/~/linear']['w'] = np.zeros((3, 3), np.float32)
  with pytest.raises(ValueError, match='leaf params/net/~/linear/w has shape'):
    checkpoint_read.load(path, bad)


def test_arrays_are_named_by_their_path_and_load_params_rebuilds_params(
    tmp_path):
  config = {'agent': 'cr_dqn', 'suite': 'atari'}
  checkpoint.save(str(tmp_path), 0, {'config': config}, _tree(5))
  with np.load(os.path.join(checkpoint.latest(str(tmp_path)), 'tree.npz')) as f:
    assert sorted(f.files) == ['count', 'key', 'params/net/~/linear/b',
                               'params/net/~/linear/w']
  params, settings = checkpoint_read.load_params(str(tmp_path))
  assert settings == config
  assert list(params) == ['net/~/linear']
  np.testing.assert_array_equal(params['net/~/linear']['w'],
                                np.full((2, 3), 5.0))
  with pytest.raises(ValueError, match='No checkpoint in'):
    checkpoint_read.load_params(str(tmp_path / 'none'))


def test_a_checkpoint_of_another_format_is_refused(tmp_path):
  checkpoint.save(str(tmp_path), 3, {'iteration': 4, 'config': {}}, _tree(3))
  path = checkpoint.latest(str(tmp_path))
  meta = checkpoint.load_meta(path)
  assert meta['format'] == checkpoint.FORMAT
  meta['format'] = checkpoint.FORMAT + 1
  (tmp_path / 'iteration_000003' / 'meta.json').write_text(json.dumps(meta))
  assert checkpoint_read.verify(path) is None  # Not damage: another format.
  message = (f'^The checkpoint {path} has format {checkpoint.FORMAT + 1}; '
             f'this code reads format {checkpoint.FORMAT} only. Add --restart '
             'to start the run over')
  for read in (checkpoint.load_meta, lambda p: checkpoint_read.load(p, _tree(0)),
               lambda p: checkpoint_read.load_params('', path=p)):
    with pytest.raises(checkpoint.FormatError, match=message):
      read(path)


def _replay_arrays(num_streams=2):
  """Steps with every array kind of zoo.replay.frame_replay's chunks."""
  def steps(begin, end):
    n = end - begin
    return [(begin, {
        'frames': np.full((num_streams, n, 10, 10, 4), begin, np.uint8),
        'actions': np.full((num_streams, n), begin, np.int32),
        'rewards': np.full((num_streams, n), 0.5, np.float32),
        'discounts': np.ones((num_streams, n), np.float32),
        'episode_steps': np.arange(n * num_streams, dtype=np.int32).reshape(
            num_streams, n)})]
  return steps


def _damage(path, how):
  size = os.path.getsize(path)
  if how == 'truncated':
    os.truncate(path, size // 2)
  elif how == 'emptied':
    os.truncate(path, 0)
  elif how == 'corrupted':  # Same size: only the hash can tell.
    with open(path, 'r+b') as f:
      f.seek(size // 2)
      byte = f.read(1)
      f.seek(size // 2)
      f.write(bytes([byte[0] ^ 0xFF]))
  elif how == 'deleted':
    os.remove(path)


_FILES = ['tree.npz', 'meta.json'] + [
    f'replay/{name}.npy' for name in ('frames', 'actions', 'rewards',
                                      'discounts', 'episode_steps')]


@pytest.mark.parametrize('how', ['truncated', 'emptied', 'corrupted',
                                 'deleted'])
def test_every_damage_of_every_file_is_named_and_the_previous_is_used(
    tmp_path, how):
  steps = _replay_arrays()
  clean = tmp_path / 'clean'
  for iteration in range(2):
    checkpoint.save(str(clean), iteration, {'iteration': iteration + 1,
                                            'config': {}}, _tree(iteration),
                    steps(6 * iteration, 6 * iteration + 6))
  newest = 'iteration_000001'
  new_chunk = 'replay/steps_000000000006_000000000012'
  shared_chunk = 'replay/steps_000000000000_000000000006'
  reasons = {'truncated': ('truncated',),
             'emptied': ('empty',), 'deleted': ('missing',),
             'corrupted': ('corrupted', 'truncated or corrupted')}[how]
  assert checkpoint_read.verify(str(clean / newest)) is None
  for name in _FILES:
    for chunk in ((new_chunk, shared_chunk) if name.startswith('replay/')
                  else (newest,)):
      directory = tmp_path / f'{name.replace("/", "_")}_{chunk[-6:]}'
      shutil.copytree(clean, directory)
      file = str(directory / chunk / name.split('/')[-1])
      _damage(file, how)
      damage = checkpoint_read.verify(str(directory / newest))
      assert damage is not None and damage.file == file, (name, damage)
      assert damage.reason.startswith(reasons), damage.reason
      assert str(damage).startswith(f'{file} is ')
      with pytest.raises(checkpoint.DamagedError, match='is damaged'):
        checkpoint_read.load(str(directory / newest), _tree(0))
      path, damages = checkpoint_read.newest_intact(str(directory))
      assert damages[0] == damage
      if chunk == shared_chunk:  # Both checkpoints use it: none is intact.
        assert path is None and len(damages) == 2
        with pytest.raises(checkpoint.DamagedError) as error:
          checkpoint_read.choose(str(directory))
        assert str(error.value).startswith(
            f'No intact checkpoint in {directory}: {file} is ')
      else:
        assert path == str(directory / 'iteration_000000')
        saved = checkpoint_read.load(path, _tree(0))
        assert int(saved.tree['count']) == 0
        assert checkpoint_read.choose(str(directory)) == (path, [damage])
        assert checkpoint_read.fallback_warning(path, damages) == (
            f'Warning: the newest checkpoint is damaged: {damage}. Using the '
            f'previous one, {path}.')


def test_a_checkpoint_of_a_given_iteration_is_verified(tmp_path):
  for iteration in range(3):
    checkpoint.save(str(tmp_path), iteration, {'config': {}}, _tree(iteration))
  assert checkpoint_read.choose(str(tmp_path), 1) == (
      str(tmp_path / 'iteration_000001'), [])
  with pytest.raises(ValueError, match=(
      r'No checkpoint of iteration 0 in .*; it keeps --iteration=1, '
      r'--iteration=2\.')):
    checkpoint_read.choose(str(tmp_path), 0)
  os.truncate(tmp_path / 'iteration_000001' / 'tree.npz', 10)
  with pytest.raises(checkpoint.DamagedError, match=(
      r'iteration_000001 is damaged: .*tree.npz is truncated \(10 bytes')):
    checkpoint_read.load_params(str(tmp_path), 1)
  params, _ = checkpoint_read.load_params(str(tmp_path), 2)
  np.testing.assert_array_equal(params['net/~/linear']['w'],
                                np.full((2, 3), 2.0))


@pytest.mark.parametrize('file', ['frames.npy', 'tree.npz', 'meta.json'])
def test_a_full_disk_during_a_save_keeps_the_previous_checkpoint(
    tmp_path, monkeypatch, file):
  directory = str(tmp_path)
  checkpoint.save(directory, 0, {'config': {}}, _tree(0), _steps(0, 4))
  before = sorted(os.listdir(directory)), _replay_files(directory)
  checkpoint_faults.install(f'enospc:1:{file}', monkeypatch.setattr)
  with pytest.raises(checkpoint.WriteError) as error:
    checkpoint.save(directory, 1, {'config': {}}, _tree(1), _steps(4, 8))
  assert error.value.errno == errno.ENOSPC
  assert str(error.value).startswith(
      f'Cannot write the checkpoint of iteration 1 in {directory} ([Errno '
      '28] No space left on device (injected)')
  assert str(error.value).endswith(
      f'the previous checkpoint, {directory}/iteration_000000, is intact: '
      'free some disk space (or fix the cause) and rerun the same command to '
      'resume from it.')
  # What the failed save wrote is gone (it frees the disk).
  assert (sorted(os.listdir(directory)), _replay_files(directory)) == before
  assert checkpoint_read.newest_intact(directory) == (
      f'{directory}/iteration_000000', [])
  monkeypatch.undo()
  checkpoint.save(directory, 1, {'config': {}}, _tree(1), _steps(4, 8))
  assert checkpoint_read.newest_intact(directory)[0].endswith('iteration_000001')


def test_verification_reads_each_file_once_per_process(tmp_path, monkeypatch):
  checkpoint.save(str(tmp_path), 0, {}, _tree(0), _steps(0, 4))
  path = checkpoint.latest(str(tmp_path))
  reads = []
  digest = checkpoint.file_digest
  monkeypatch.setattr(checkpoint, 'file_digest',
                      lambda file: reads.append(file) or digest(file))
  checkpoint_read._VERIFIED.clear()
  assert checkpoint_read.verify(path) is None and len(reads) == 3
  assert checkpoint_read.verify(path) is None and len(reads) == 3  # Cached.
  _damage(os.path.join(path, 'tree.npz'), 'corrupted')  # A new mtime.
  assert checkpoint_read.verify(path).reason.startswith('corrupted')
