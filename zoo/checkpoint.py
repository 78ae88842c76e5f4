"""Atomic run checkpoints: one directory per iteration, the last good kept.

A checkpoint is written into a temporary directory which is then renamed to
`iteration_NNNNNN`; a directory with that name is therefore complete. Older
checkpoints are deleted only after the new one is in place. Contents:
`meta.json` (counters, config, CSV rows, RNG states), `tree.npz` (the leaves
of a pytree such as params and optimizer state, in flattening order) and one
`.npy` per large array (the replay's filled part), loadable memory-mapped.
"""

import json
import os
import re
import shutil
from typing import Any, Dict, Optional, Tuple

import jax
import numpy as np

_NAME = re.compile(r'^iteration_(\d{6,})$')
_META = 'meta.json'
_TREE = 'tree.npz'


def _fsync_dir(path: str) -> None:
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def latest(directory: str) -> Optional[str]:
  """Return the newest complete checkpoint in `directory`, or None."""
  if not os.path.isdir(directory):
    return None
  found = []
  for name in os.listdir(directory):
    match = _NAME.match(name)
    path = os.path.join(directory, name)
    if match and os.path.exists(os.path.join(path, _META)):
      found.append((int(match.group(1)), path))
  return max(found)[1] if found else None


def save(directory: str, iteration: int, meta: Dict[str, Any], tree: Any,
         arrays: Dict[str, np.ndarray]) -> str:
  """Write a checkpoint for `iteration` atomically; return its path."""
  os.makedirs(directory, exist_ok=True)
  final = os.path.join(directory, f'iteration_{iteration:06d}')
  temp = os.path.join(directory, f'.tmp-iteration_{iteration:06d}-{os.getpid()}')
  shutil.rmtree(temp, ignore_errors=True)
  os.makedirs(temp)
  leaves, treedef = jax.tree.flatten(tree)
  with open(os.path.join(temp, _TREE), 'wb') as f:
    np.savez(f, *[np.asarray(leaf) for leaf in leaves])
    f.flush()
    os.fsync(f.fileno())
  for name, array in arrays.items():
    with open(os.path.join(temp, f'{name}.npy'), 'wb') as f:
      # np.save writes a strided view in chunks: no full-size copy.
      np.save(f, array, allow_pickle=False)
      f.flush()
      os.fsync(f.fileno())
  meta = dict(meta, tree_structure=str(treedef), array_names=sorted(arrays))
  with open(os.path.join(temp, _META), 'w') as f:
    json.dump(meta, f)
    f.flush()
    os.fsync(f.fileno())
  _fsync_dir(temp)
  if os.path.exists(final):  # A rerun of the same iteration: replace it.
    shutil.rmtree(final)
  os.rename(temp, final)
  _fsync_dir(directory)
  for name in os.listdir(directory):  # Older checkpoints, stale temps.
    path = os.path.join(directory, name)
    if path != final and (_NAME.match(name) or name.startswith('.tmp-')):
      shutil.rmtree(path, ignore_errors=True)
  return final


def load_meta(path: str) -> Dict[str, Any]:
  with open(os.path.join(path, _META)) as f:
    return json.load(f)


def load(path: str, template: Any) -> Tuple[Dict[str, Any], Any,
                                             Dict[str, np.ndarray]]:
  """Return (meta, tree shaped like `template`, memory-mapped arrays)."""
  meta = load_meta(path)
  leaves, treedef = jax.tree.flatten(template)
  if str(treedef) != meta['tree_structure']:
    raise ValueError(f'Checkpoint {path} holds a differently structured '
                     'state (another network or optimizer?).')
  with np.load(os.path.join(path, _TREE), allow_pickle=False) as saved:
    loaded = [saved[f'arr_{i}'] for i in range(len(leaves))]
  for i, (want, got) in enumerate(zip(leaves, loaded)):
    if np.shape(want) != got.shape:
      raise ValueError(f'Checkpoint {path}: leaf {i} has shape {got.shape}, '
                       f'expected {np.shape(want)}.')
  tree = jax.tree.unflatten(treedef, loaded)
  arrays = {name: _load_array(os.path.join(path, f'{name}.npy'))
            for name in meta['array_names']}
  return meta, tree, arrays


def _load_array(path: str) -> np.ndarray:
  # Memory-mapped so that restoring a 7 GB replay does not need 14 GB.
  try:
    return np.load(path, mmap_mode='r', allow_pickle=False)
  except ValueError:  # Empty arrays cannot be mapped.
    return np.load(path, allow_pickle=False)
