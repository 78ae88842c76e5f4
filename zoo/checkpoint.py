"""Atomic run checkpoints whose replay steps are written once, in chunks.

  DIR/iteration_NNNNNN/meta.json   counters, config, CSV rows, RNG states,
                                   the replay chunks this checkpoint uses
  DIR/iteration_NNNNNN/tree.npz    a pytree (params, optimizer state, ...),
                                   one array per leaf, named by its path
  DIR/replay/steps_B_E/*.npy       replay steps [B, E), one file per array,
                                   written once and loaded memory-mapped

A checkpoint directory `iteration_NNNNNN` is written under a temporary name
and renamed when complete, and so is each chunk `steps_B_E`; a directory
with either name therefore is complete. Each save writes only the steps
added since the previous one (one chunk) plus the small state: the frames
already saved stay on disk. Once the new checkpoint is in place, older
checkpoints and the chunks it no longer uses (steps overwritten in the
replay, or chunks a killed process wrote after the last checkpoint) are
deleted. Disk use is therefore at most a full replay plus one iteration's
steps plus the small state.
"""

import json
import os
import re
import shutil
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import jax
import numpy as np

_NAME = re.compile(r'^iteration_(\d{6,})$')
_CHUNK = re.compile(r'^steps_(\d+)_(\d+)$')
_META = 'meta.json'
_TREE = 'tree.npz'
REPLAY_DIR = 'replay'

Steps = Tuple[int, Dict[str, np.ndarray]]  # (first step, {name: [K, n, ...]})


class Checkpoint(NamedTuple):
  meta: Dict[str, Any]
  tree: Any
  replay_chunks: List[Steps]  # Memory-mapped, oldest first.
  legacy_arrays: Dict[str, np.ndarray]  # Replay slots of older checkpoints.


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


def _chunk_range(name: str) -> Tuple[int, int]:
  begin, end = _CHUNK.match(name).groups()
  return int(begin), int(end)


def _path_entry(key) -> Any:
  for attribute in ('key', 'name', 'idx'):  # DictKey, GetAttrKey, SequenceKey
    if hasattr(key, attribute):
      return getattr(key, attribute)
  return str(key)


def _named_leaves(tree: Any) -> Tuple[List[List[Any]], List[str], List[Any]]:
  """Return (paths, names, leaves) of a pytree; names join paths with '/'."""
  with_paths, _ = jax.tree_util.tree_flatten_with_path(tree)
  paths = [[_path_entry(k) for k in path] for path, _ in with_paths]
  names = ['/'.join(str(entry) for entry in path) for path in paths]
  if len(set(names)) != len(names):
    raise ValueError('Pytree leaves with equal names: ' + ', '.join(
        sorted({n for n in names if names.count(n) > 1})))
  return paths, names, [leaf for _, leaf in with_paths]


def _write_npy(path: str, pieces: Sequence[np.ndarray]) -> None:
  """Write the concatenation of [K, n_i, ...] pieces along axis 1 as .npy.

  Stream by stream, piece by piece: each write is a contiguous view, so the
  steps are never copied into one array first.
  """
  first = pieces[0]
  shape = (first.shape[0], sum(p.shape[1] for p in pieces)) + first.shape[2:]
  with open(path, 'wb') as f:
    np.lib.format.write_array_header_2_0(f, {
        'descr': np.lib.format.dtype_to_descr(first.dtype),
        'fortran_order': False, 'shape': shape})
    for k in range(shape[0]):
      for piece in pieces:
        f.write(memoryview(np.ascontiguousarray(piece[k])).cast('B'))
    f.flush()
    os.fsync(f.fileno())


def _write_chunk(directory: str, new_steps: Sequence[Steps]) -> str:
  """Write consecutive step pieces as one chunk; return its name."""
  begin = new_steps[0][0]
  end = begin
  for first, arrays in new_steps:
    if first != end:
      raise ValueError(f'Replay steps are not consecutive: {first} after '
                       f'{end}.')
    end += next(iter(arrays.values())).shape[1]
  name = f'steps_{begin:012d}_{end:012d}'
  replay_dir = os.path.join(directory, REPLAY_DIR)
  os.makedirs(replay_dir, exist_ok=True)
  temp = os.path.join(replay_dir, f'.tmp-{name}-{os.getpid()}')
  shutil.rmtree(temp, ignore_errors=True)
  os.makedirs(temp)
  for array_name in new_steps[0][1]:
    _write_npy(os.path.join(temp, f'{array_name}.npy'),
               [arrays[array_name] for _, arrays in new_steps])
  _fsync_dir(temp)
  final = os.path.join(replay_dir, name)
  # A chunk of this name that no checkpoint uses was left by a killed
  # process; its steps may differ from these (it never became part of a run).
  shutil.rmtree(final, ignore_errors=True)
  os.rename(temp, final)
  _fsync_dir(replay_dir)
  return name


def save(directory: str, iteration: int, meta: Dict[str, Any], tree: Any,
         new_steps: Sequence[Steps] = (), keep_steps_from: int = 0) -> str:
  """Write a checkpoint for `iteration` atomically; return its path.

  Args:
    directory: the run's checkpoint directory.
    iteration: names the checkpoint.
    meta: JSON-able state (counters, config, rows, RNG states).
    tree: pytree of arrays (agent state).
    new_steps: replay steps added since the previous checkpoint, as
      FrameReplay.steps returns them (consecutive pieces); written once, as
      one chunk.
    keep_steps_from: the oldest replay step still needed; the previous
      checkpoint's chunks that end at or before it are dropped.

  Raises:
    ValueError: if the new steps do not continue the previous checkpoint's.
  """
  os.makedirs(directory, exist_ok=True)
  previous = latest(directory)
  chunks = [name for name in
            (load_meta(previous).get('replay_chunks', []) if previous else [])
            if _chunk_range(name)[1] > keep_steps_from]
  if new_steps:
    begin = new_steps[0][0]
    if chunks and _chunk_range(chunks[-1])[1] != begin:
      raise ValueError(f'New replay steps start at {begin}, the checkpoint '
                       f'{previous} ends at {_chunk_range(chunks[-1])[1]}.')
    chunks.append(_write_chunk(directory, new_steps))

  final = os.path.join(directory, f'iteration_{iteration:06d}')
  temp = os.path.join(directory,
                      f'.tmp-iteration_{iteration:06d}-{os.getpid()}')
  shutil.rmtree(temp, ignore_errors=True)
  os.makedirs(temp)
  paths, names, leaves = _named_leaves(tree)
  with open(os.path.join(temp, _TREE), 'wb') as f:
    np.savez(f, **{name: np.asarray(leaf)
                   for name, leaf in zip(names, leaves)})
    f.flush()
    os.fsync(f.fileno())
  meta = dict(meta, tree_paths=paths, replay_chunks=chunks)
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
  replay_dir = os.path.join(directory, REPLAY_DIR)
  if os.path.isdir(replay_dir):  # Chunks no checkpoint uses any more.
    for name in os.listdir(replay_dir):
      if name not in chunks:
        shutil.rmtree(os.path.join(replay_dir, name), ignore_errors=True)
  return final


def load_meta(path: str) -> Dict[str, Any]:
  with open(os.path.join(path, _META)) as f:
    return json.load(f)


def _holds_key(meta: Dict[str, Any], key: str) -> bool:
  """Return whether a checkpoint's tree has the top-level dict key `key`."""
  if 'tree_paths' in meta:
    return any(tree_path[0] == key for tree_path in meta['tree_paths'])
  return repr(key) + ':' in meta['tree_structure']  # PyTreeDef({'key': *..


def load(path: str, template: Any, optional: Sequence[str] = ()) -> Checkpoint:
  """Return the checkpoint at `path`, its tree shaped like `template`.

  Args:
    path: a checkpoint directory (iteration_NNNNNN).
    template: the state's pytree (a dict at the top).
    optional: top-level keys of `template` added to the state after older
      checkpoints were written; a checkpoint without one loads without it
      (the tree then lacks the key: its owner fills in the old behaviour).
  """
  meta = load_meta(path)
  absent = [key for key in optional if not _holds_key(meta, key)]
  if absent:
    template = {k: v for k, v in template.items() if k not in absent}
  leaves, treedef = jax.tree.flatten(template)
  if 'tree_paths' in meta:
    _, names, _ = _named_leaves(template)
    with np.load(os.path.join(path, _TREE), allow_pickle=False) as saved:
      if sorted(names) != sorted(saved.files):
        raise ValueError(
            f'Checkpoint {path} holds a differently structured state (another '
            'network or optimizer?): leaves only in the checkpoint: '
            f'{sorted(set(saved.files) - set(names))[:5]}, only expected: '
            f'{sorted(set(names) - set(saved.files))[:5]}.')
      loaded = [saved[name] for name in names]
  else:  # Written before leaves were named: in flattening order.
    if str(treedef) != meta['tree_structure']:
      raise ValueError(f'Checkpoint {path} holds a differently structured '
                       'state (another network or optimizer?).')
    names = [f'arr_{i}' for i in range(len(leaves))]
    with np.load(os.path.join(path, _TREE), allow_pickle=False) as saved:
      loaded = [saved[name] for name in names]
  for name, want, got in zip(names, leaves, loaded):
    if np.shape(want) != got.shape:
      raise ValueError(f'Checkpoint {path}: leaf {name} has shape '
                       f'{got.shape}, expected {np.shape(want)}.')
  tree = jax.tree.unflatten(treedef, loaded)
  directory = os.path.dirname(path)
  chunks = []
  for name in meta.get('replay_chunks', []):
    chunk_dir = os.path.join(directory, REPLAY_DIR, name)
    chunks.append((_chunk_range(name)[0], {
        file[:-len('.npy')]: _load_array(os.path.join(chunk_dir, file))
        for file in sorted(os.listdir(chunk_dir)) if file.endswith('.npy')}))
  legacy = {name: _load_array(os.path.join(path, f'{name}.npy'))
            for name in meta.get('array_names', [])}
  return Checkpoint(meta, tree, chunks, legacy)


def load_params(checkpoint_dir: str) -> Tuple[Dict[str, Any], Dict[str, Any]]:
  """Return (network parameters, settings) of a run's latest checkpoint.

  The parameters are the online network's Haiku params (nested dicts of
  arrays, as `hk.transform(network_fn).init` returns them), read by name
  from the checkpoint without rebuilding the agent. The settings are the
  run's (`zoo.settings.Settings.checkpoint_config()`: every setting but
  paths, plus 'agent' and 'suite'), enough to rebuild the network:

    params, settings = checkpoint.load_params(
        'runs/cr_dqn/pong/seed_1/checkpoints')
    suite = suites.suite_by_name(settings['suite'])
    network = hk.transform(suite.network_fn(
        settings_lib.Settings.from_dict(settings), num_actions))
    network.apply(params, None, observations)

  Raises:
    ValueError: no checkpoint there, or one written before leaves were named.
  """
  path = latest(checkpoint_dir)
  if path is None:
    raise ValueError(f'No checkpoint in {checkpoint_dir!r} (a run writes '
                     'iteration_NNNNNN directories there).')
  meta = load_meta(path)
  if 'tree_paths' not in meta:
    raise ValueError(f'Checkpoint {path} predates named arrays; resume the run '
                     'for one iteration to rewrite it.')
  params: Dict[str, Any] = {}
  with np.load(os.path.join(path, _TREE), allow_pickle=False) as saved:
    for tree_path in meta['tree_paths']:
      if tree_path[0] != 'params':
        continue
      node = params
      for key in tree_path[1:-1]:
        node = node.setdefault(key, {})
      node[tree_path[-1]] = saved['/'.join(str(k) for k in tree_path)]
  return params, meta['config']


def _load_array(path: str) -> np.ndarray:
  # Memory-mapped so that restoring a 7 GB replay does not need 14 GB.
  try:
    return np.load(path, mmap_mode='r', allow_pickle=False)
  except ValueError:  # Empty arrays cannot be mapped.
    return np.load(path, allow_pickle=False)
