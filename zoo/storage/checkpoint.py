"""Run checkpoints: their layout and format, and the writer.

  DIR/iteration_NNNNNN/meta.json   counters, config, CSV rows, RNG states,
                                   replay chunks, each file's size and SHA-256
  DIR/iteration_NNNNNN/tree.npz    a pytree, one array per leaf, named by path
  DIR/replay/steps_B_E/*.npy       replay steps [B, E), loaded memory-mapped

Written under temporary names, renamed when complete; each save writes only
the new steps and keeps the previous checkpoint (docs/data-safety.md).
"""

import contextlib
import hashlib
import io
import itertools
import json
import os
import re
import shutil
from typing import (Any, Callable, Dict, List, NamedTuple, Optional, Sequence,
                    Tuple)

import jax
import numpy as np

from zoo.storage import files

_NAME = re.compile(r'^iteration_(\d{6,})$')
_CHUNK = re.compile(r'^steps_(\d+)_(\d+)$')
META_FILE = 'meta.json'
TREE_FILE = 'tree.npz'
REPLAY_DIR = 'replay'
# The layout of a checkpoint (meta keys, tree, replay chunks, what a loop
# keeps in its meta); raise it whenever a change makes older ones unreadable.
FORMAT = 3

Steps = Tuple[int, Dict[str, np.ndarray]]  # (first step, {name: [K, n, ...]})


class Checkpoint(NamedTuple):
  meta: Dict[str, Any]
  tree: Any
  replay_chunks: List[Steps]  # Memory-mapped, oldest first.


class Damage(NamedTuple):
  """A checkpoint that failed verification: which file, and how."""
  path: str    # The checkpoint (DIR/iteration_NNNNNN).
  file: str    # The damaged file's path.
  reason: str  # E.g. 'truncated: 1000 bytes, 5000 written'.

  def __str__(self) -> str:
    return f'{self.file} is {self.reason}'


class DamagedError(ValueError):
  """No intact checkpoint to use; the message names the damaged files."""

  def __init__(self, message: str, damages: Sequence[Damage]):
    super().__init__(message)
    self.damages = list(damages)


class FormatError(ValueError):
  """A checkpoint of another format than this code's (FORMAT)."""


class WriteError(Exception):
  """A checkpoint could not be written; the previous one is kept intact."""

  def __init__(self, message: str, errno_value: Optional[int]):
    super().__init__(message)
    self.errno = errno_value


def iterations(directory: str) -> List[Tuple[int, str]]:
  """Return (iteration, path) of every checkpoint directory, newest first."""
  if not directory or not os.path.isdir(directory):
    return []
  return sorted(((int(match.group(1)), os.path.join(directory, name))
                 for name in os.listdir(directory)
                 if (match := _NAME.match(name))), reverse=True)


def latest(directory: str) -> Optional[str]:
  """Return the newest complete checkpoint (unverified), or None."""
  for _, path in iterations(directory):
    if os.path.exists(os.path.join(path, META_FILE)):
      return path
  return None


def iteration_of(path: str) -> int:
  """Return N of a checkpoint path DIR/iteration_N."""
  return int(_NAME.match(os.path.basename(path)).group(1))


def chunk_range(name: str) -> Tuple[int, int]:
  begin, end = _CHUNK.match(name).groups()
  return int(begin), int(end)


def file_digest(path: str) -> List[Any]:
  """Return [size, SHA-256 hex] of a file."""
  with open(path, 'rb') as f:
    digest = hashlib.file_digest(f, 'sha256').hexdigest()
    return [f.tell(), digest]


def meta_digest(meta: Dict[str, Any]) -> str:
  body = {k: v for k, v in meta.items() if k != 'meta_sha256'}
  return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


def _path_entry(key) -> Any:
  for attribute in ('key', 'name', 'idx'):  # DictKey, GetAttrKey, SequenceKey
    if hasattr(key, attribute):
      return getattr(key, attribute)
  return str(key)


def named_leaves(tree: Any) -> Tuple[List[List[Any]], List[str], List[Any]]:
  """Return (paths, names, leaves) of a pytree; names join paths with '/'."""
  with_paths, _ = jax.tree_util.tree_flatten_with_path(tree)
  paths = [[_path_entry(k) for k in path] for path, _ in with_paths]
  names = ['/'.join(str(entry) for entry in path) for path in paths]
  if len(set(names)) != len(names):
    raise ValueError('Pytree leaves with equal names: ' + ', '.join(
        sorted({n for n in names if names.count(n) > 1})))
  return paths, names, [leaf for _, leaf in with_paths]


def _write_file(path: str, write: Callable[[Any], Any]) -> Any:
  """Write a new file durably with `write(f)`; return what it returns."""
  with open(path, 'wb') as f:
    result = write(f)
    f.flush()
    os.fsync(f.fileno())
  return result


def _write_npy(f, pieces: Sequence[np.ndarray]) -> List[Any]:
  """Write [K, n_i, ...] pieces joined on axis 1 as .npy; return its digest.

  Piece by piece, as contiguous views: nothing is copied into one array.
  """
  first = pieces[0]
  shape = (first.shape[0], sum(p.shape[1] for p in pieces)) + first.shape[2:]
  header = io.BytesIO()
  np.lib.format.write_array_header_2_0(header, {
      'descr': np.lib.format.dtype_to_descr(first.dtype),
      'fortran_order': False, 'shape': shape})
  digest, size = hashlib.sha256(), 0
  for data in itertools.chain([header.getvalue()], (
      np.ascontiguousarray(piece[k]) for k in range(shape[0])
      for piece in pieces)):
    data = memoryview(data).cast('B')
    digest.update(data)
    size += len(data)
    f.write(data)
  return [size, digest.hexdigest()]


def _remove(path: str) -> None:
  """Delete a directory; a kill meanwhile leaves only a temporary name."""
  if not os.path.exists(path):
    return
  parent, name = os.path.split(path)
  doomed = os.path.join(parent, f'.tmp-deleted-{name}-{os.getpid()}')
  os.rename(path, doomed)
  shutil.rmtree(doomed, ignore_errors=True)


def _remove_temporaries(directory: str) -> None:
  """Delete the '.tmp-' entries killed or failed writers left."""
  for name in os.listdir(directory) if os.path.isdir(directory) else ():
    if name.startswith('.tmp-'):
      shutil.rmtree(os.path.join(directory, name), ignore_errors=True)


def _write_chunk(replay_dir: str, new_steps: Sequence[Steps]
                 ) -> Tuple[str, Dict[str, List[Any]]]:
  """Write consecutive step pieces as one chunk; return its name, digests."""
  begin = end = new_steps[0][0]
  for first, arrays in new_steps:
    if first != end:
      raise ValueError(f'Replay steps are not consecutive: {first} after '
                       f'{end}.')
    end += next(iter(arrays.values())).shape[1]
  name = f'steps_{begin:012d}_{end:012d}'
  temp = os.path.join(replay_dir, f'.tmp-{name}-{os.getpid()}')
  os.makedirs(temp)
  digests = {}
  for array_name in new_steps[0][1]:
    pieces = [arrays[array_name] for _, arrays in new_steps]
    digests[f'{name}/{array_name}.npy'] = _write_file(
        os.path.join(temp, f'{array_name}.npy'),
        lambda f, pieces=pieces: _write_npy(f, pieces))
  files.fsync_path(temp)
  final = os.path.join(replay_dir, name)
  # A chunk of this name that no checkpoint uses was left by a killed
  # process; its steps may differ from these (it never became part of a run).
  _remove(final)
  os.rename(temp, final)
  files.fsync_path(replay_dir)
  return name, digests


def _keep_previous(directory: str, iteration: int
                   ) -> Tuple[Optional[str], Dict[str, Any]]:
  """Return the newest checkpoint before `iteration` whose meta loads, and it.

  Deletes every other checkpoint and every chunk it does not use: the disk
  then holds at most those and the new chunk (what zoo.loops.runner's disk
  check counts).
  """
  previous, meta = None, {}
  for number, path in iterations(directory):
    if number < iteration and previous is None:
      with contextlib.suppress(OSError, ValueError):
        previous, meta = path, load_meta(path)
    if path != previous:
      _remove(path)
  _remove_temporaries(directory)
  replay_dir = os.path.join(directory, REPLAY_DIR)
  for name in os.listdir(replay_dir) if os.path.isdir(replay_dir) else ():
    if name not in meta.get('replay_chunks', []):
      _remove(os.path.join(replay_dir, name))
  return previous, meta


def _write_state(temp: str, meta: Dict[str, Any], tree: Any) -> None:
  """Write the tree and the meta (last: it lists the tree's digest)."""
  os.makedirs(temp)
  paths, names, leaves = named_leaves(tree)
  tree_path = os.path.join(temp, TREE_FILE)
  _write_file(tree_path, lambda f: np.savez(f, **{
      name: np.asarray(leaf) for name, leaf in zip(names, leaves)}))
  meta = dict(meta, tree_paths=paths,
              files={TREE_FILE: file_digest(tree_path)})
  meta['meta_sha256'] = meta_digest(meta)
  _write_file(os.path.join(temp, META_FILE), lambda f: f.write(
      json.dumps(meta, sort_keys=True).encode()))
  files.fsync_path(temp)


def _write_error(directory: str, iteration: int, previous: Optional[str],
                 error: OSError) -> WriteError:
  kept, then = ((f'the previous checkpoint, {previous}, is intact',
                 'resume from it') if previous else
                ('there is no earlier checkpoint', 'start again'))
  return WriteError(
      f'Cannot write the checkpoint of iteration {iteration} in {directory} '
      f'({error}); what it wrote was removed, and {kept}: free some disk '
      f'space (or fix the cause) and rerun the same command to {then}.',
      error.errno)


def save(directory: str, iteration: int, meta: Dict[str, Any], tree: Any,
         new_steps: Sequence[Steps] = (), keep_steps_from: int = 0) -> str:
  """Write a checkpoint for `iteration` atomically; return its path.

  Keeps the newest earlier checkpoint (the fallback) and deletes the others
  and the chunks neither uses. `meta`: JSON-able state; `tree`: a pytree of
  arrays; `new_steps`: the replay steps since the previous checkpoint
  (FrameReplay.steps); `keep_steps_from`: the oldest replay step still needed.

  Raises:
    ValueError: the new steps do not continue the previous checkpoint's.
    WriteError: an OSError (a full disk); what this save wrote is removed.
  """
  os.makedirs(directory, exist_ok=True)
  previous, previous_meta = _keep_previous(directory, iteration)
  chunks = [name for name in previous_meta.get('replay_chunks', [])
            if chunk_range(name)[1] > keep_steps_from]
  if new_steps and chunks and chunk_range(chunks[-1])[1] != new_steps[0][0]:
    raise ValueError(f'New replay steps start at {new_steps[0][0]}, the '
                     f'checkpoint {previous} ends at '
                     f'{chunk_range(chunks[-1])[1]}.')
  replay_dir = os.path.join(directory, REPLAY_DIR)
  final = os.path.join(directory, f'iteration_{iteration:06d}')
  temp = os.path.join(directory,
                      f'.tmp-iteration_{iteration:06d}-{os.getpid()}')
  new_chunk = None
  try:
    replay_files = {
        f'{name}/{file_name}': previous_meta['replay_files'][
            f'{name}/{file_name}']
        for name in chunks
        for file_name in sorted(os.listdir(os.path.join(replay_dir, name)))}
    if new_steps:
      os.makedirs(replay_dir, exist_ok=True)
      new_chunk, digests = _write_chunk(replay_dir, new_steps)
      chunks.append(new_chunk)
      replay_files.update(digests)
    _write_state(temp, dict(meta, format=FORMAT, replay_chunks=chunks,
                            replay_files=replay_files), tree)
    os.rename(temp, final)
    files.fsync_path(directory)
  except OSError as e:
    if new_chunk is not None:  # No checkpoint uses it.
      shutil.rmtree(os.path.join(replay_dir, new_chunk), ignore_errors=True)
    _remove_temporaries(directory)
    _remove_temporaries(replay_dir)
    raise _write_error(directory, iteration, previous, e) from e
  return final


def load_meta(path: str) -> Dict[str, Any]:
  """Return a checkpoint's meta; FormatError if another format wrote it."""
  with open(os.path.join(path, META_FILE)) as f:
    meta = json.load(f)
  if meta.get('format') != FORMAT:
    raise FormatError(
        f'The checkpoint {path} has format {meta.get("format", 0)}; this code '
        f'reads format {FORMAT} only. Add --restart to start the run over '
        "(moves the run's files aside), or resume it with the code that "
        'wrote it.')
  return meta
