"""Tests for zoo.checkpoint: atomic save, latest, load."""

import os

import numpy as np
import pytest

from zoo import checkpoint


def _tree(value):
  return {'params': {'w': np.full((2, 3), value, np.float32)},
          'count': np.int64(value), 'key': np.array([1, value], np.uint32)}


def test_round_trip_and_only_last_kept(tmp_path):
  directory = str(tmp_path / 'ckpt')
  assert checkpoint.latest(directory) is None
  for iteration in range(3):
    checkpoint.save(directory, iteration, {'iteration': iteration + 1,
                                           'rows': [{'x': float('nan')}]},
                    _tree(iteration), {'frames': np.arange(6).reshape(2, 3)})
  path = checkpoint.latest(directory)
  assert os.path.basename(path) == 'iteration_000002'
  assert sorted(os.listdir(directory)) == ['iteration_000002']
  meta, tree, arrays = checkpoint.load(path, _tree(0))
  assert meta['iteration'] == 3 and np.isnan(meta['rows'][0]['x'])
  np.testing.assert_array_equal(tree['params']['w'], np.full((2, 3), 2.0))
  assert int(tree['count']) == 2
  np.testing.assert_array_equal(arrays['frames'], np.arange(6).reshape(2, 3))


def test_incomplete_checkpoints_are_ignored(tmp_path):
  directory = str(tmp_path)
  checkpoint.save(directory, 0, {}, _tree(0), {})
  # A crash while writing iteration 1 leaves a temp dir (and maybe a
  # final-named directory without meta.json): neither is loaded.
  os.makedirs(os.path.join(directory, '.tmp-iteration_000001-123'))
  os.makedirs(os.path.join(directory, 'iteration_000001'))
  assert checkpoint.latest(directory).endswith('iteration_000000')
  checkpoint.save(directory, 1, {}, _tree(1), {})
  assert sorted(os.listdir(directory)) == ['iteration_000001']


def test_empty_arrays_round_trip(tmp_path):
  checkpoint.save(str(tmp_path), 0, {}, _tree(0),
                  {'frames': np.zeros((2, 0, 4, 4), np.uint8)})
  _, _, arrays = checkpoint.load(checkpoint.latest(str(tmp_path)), _tree(0))
  assert arrays['frames'].shape == (2, 0, 4, 4)


def test_mismatched_structure_is_refused(tmp_path):
  checkpoint.save(str(tmp_path), 0, {}, _tree(0), {})
  path = checkpoint.latest(str(tmp_path))
  with pytest.raises(ValueError, match='differently structured'):
    checkpoint.load(path, {'other': np.zeros(1)})
  bad = _tree(0)
  bad['params']['w'] = np.zeros((3, 3), np.float32)
  with pytest.raises(ValueError, match='shape'):
    checkpoint.load(path, bad)
