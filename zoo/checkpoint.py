"""Verified run checkpoints whose replay steps are written once, in chunks.

  DIR/iteration_NNNNNN/meta.json   counters, config, CSV rows, RNG states,
                                   the replay chunks this checkpoint uses, the
                                   size and SHA-256 of every file it needs
                                   (and of its own content); written last
  DIR/iteration_NNNNNN/tree.npz    a pytree (params, optimizer state, ...),
                                   one array per leaf, named by its path
  DIR/replay/steps_B_E/*.npy       replay steps [B, E), one file per array,
                                   written once and loaded memory-mapped

A checkpoint directory `iteration_NNNNNN` is written under a temporary name
and renamed when complete, and so is each chunk `steps_B_E`; a directory
with either name therefore is complete. A checkpoint is trusted only once
verified (`verify`: every file listed in its meta has its size and hash);
`newest_intact` skips damaged ones (truncated, emptied or corrupted files),
so a run falls back to the previous checkpoint, which is kept: each save
writes only the steps added since the previous one (one chunk) plus the small
state, the two newest checkpoints share their chunks, and older checkpoints
and unused chunks are deleted. Disk use is therefore at most a full replay
plus one iteration's steps plus the small state of two checkpoints.
Each meta records the FORMAT that wrote it; a checkpoint of another format
is refused (FormatError), never read by guesswork.
"""

import errno
import hashlib
import json
import os
import re
import shutil
import signal
import zipfile
from typing import Any, Dict, List, NamedTuple, Optional, Sequence, Tuple

import jax
import numpy as np

_NAME = re.compile(r'^iteration_(\d{6,})$')
_CHUNK = re.compile(r'^steps_(\d+)_(\d+)$')
_META = 'meta.json'
_TREE = 'tree.npz'
REPLAY_DIR = 'replay'
# Tests set it to 'kill|enospc:ITERATION:FILE' to fail a save of ITERATION
# just before FILE (e.g. tree.npz, frames.npy, meta.json) is written: SIGKILL
# of the process, or OSError(ENOSPC) as from a full disk.
FAULT_ENV = 'ZOO_CHECKPOINT_TEST_FAULT'
_BLOCK = 1 << 22
# The layout of a checkpoint (meta keys, tree, replay chunks, what a loop
# keeps in its meta); raise it whenever a change makes older ones unreadable.
FORMAT = 2

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


def _fsync_dir(path: str) -> None:
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def _iterations(directory: str) -> List[Tuple[int, str]]:
  """Return (iteration, path) of every checkpoint directory, newest first."""
  if not directory or not os.path.isdir(directory):
    return []
  found = []
  for name in os.listdir(directory):
    match = _NAME.match(name)
    if match:
      found.append((int(match.group(1)), os.path.join(directory, name)))
  return sorted(found, reverse=True)


def latest(directory: str) -> Optional[str]:
  """Return the newest complete checkpoint (unverified), or None."""
  for _, path in _iterations(directory):
    if os.path.exists(os.path.join(path, _META)):
      return path
  return None


def iteration_of(path: str) -> int:
  """Return N of a checkpoint path DIR/iteration_N."""
  return int(_NAME.match(os.path.basename(path)).group(1))


def _fault(iteration: int, file_name: str) -> None:
  """Fail here if FAULT_ENV asks to (fault-injection tests only)."""
  fault = os.environ.get(FAULT_ENV)
  if not fault:
    return
  action, at_iteration, at_file = fault.split(':')
  if int(at_iteration) != iteration or at_file != file_name:
    return
  if action == 'kill':
    os.kill(os.getpid(), signal.SIGKILL)
  if action == 'enospc':
    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + ' (injected)',
                  file_name)


class _Hashing:
  """A binary file that records the size and SHA-256 of what is written."""

  def __init__(self, f):
    self._file, self._hash, self.size = f, hashlib.sha256(), 0

  def write(self, data) -> int:
    data = memoryview(data).cast('B')
    self._hash.update(data)
    self.size += len(data)
    return self._file.write(data)

  def digest(self) -> List[Any]:
    return [self.size, self._hash.hexdigest()]


def _file_digest(path: str) -> List[Any]:
  """Return [size, SHA-256 hex] of a file."""
  digest, size = hashlib.sha256(), 0
  with open(path, 'rb') as f:
    while True:
      block = f.read(_BLOCK)
      if not block:
        return [size, digest.hexdigest()]
      digest.update(block)
      size += len(block)


def _meta_digest(meta: Dict[str, Any]) -> str:
  body = {k: v for k, v in meta.items() if k != 'meta_sha256'}
  return hashlib.sha256(json.dumps(body, sort_keys=True).encode()).hexdigest()


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


def _write_npy(path: str, pieces: Sequence[np.ndarray]) -> List[Any]:
  """Write the concatenation of [K, n_i, ...] pieces along axis 1 as .npy.

  Stream by stream, piece by piece: each write is a contiguous view, so the
  steps are never copied into one array first. Returns [size, SHA-256].
  """
  first = pieces[0]
  shape = (first.shape[0], sum(p.shape[1] for p in pieces)) + first.shape[2:]
  with open(path, 'wb') as raw:
    f = _Hashing(raw)
    np.lib.format.write_array_header_2_0(f, {
        'descr': np.lib.format.dtype_to_descr(first.dtype),
        'fortran_order': False, 'shape': shape})
    for k in range(shape[0]):
      for piece in pieces:
        f.write(np.ascontiguousarray(piece[k]))
    raw.flush()
    os.fsync(raw.fileno())
  return f.digest()


def _remove(path: str) -> None:
  """Delete a directory; a kill meanwhile leaves only a temporary name."""
  if not os.path.exists(path):
    return
  parent, name = os.path.split(path)
  doomed = os.path.join(parent, f'.tmp-deleted-{name}-{os.getpid()}')
  os.rename(path, doomed)
  shutil.rmtree(doomed, ignore_errors=True)


def _write_chunk(directory: str, iteration: int, new_steps: Sequence[Steps]
                 ) -> Tuple[str, Dict[str, List[Any]]]:
  """Write consecutive step pieces as one chunk; return its name, digests."""
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
  digests = {}
  for array_name in new_steps[0][1]:
    file_name = f'{array_name}.npy'
    _fault(iteration, file_name)
    digests[f'{name}/{file_name}'] = _write_npy(
        os.path.join(temp, file_name),
        [arrays[array_name] for _, arrays in new_steps])
  _fsync_dir(temp)
  final = os.path.join(replay_dir, name)
  # A chunk of this name that no checkpoint uses was left by a killed
  # process; its steps may differ from these (it never became part of a run).
  _remove(final)
  os.rename(temp, final)
  _fsync_dir(replay_dir)
  return name, digests


def _previous(directory: str, iteration: int
              ) -> Tuple[Optional[str], Dict[str, Any]]:
  """Return the newest checkpoint before `iteration` whose meta loads."""
  for number, path in _iterations(directory):
    if number < iteration:
      try:
        return path, load_meta(path)
      except (OSError, ValueError):
        continue
  return None, {}


def save(directory: str, iteration: int, meta: Dict[str, Any], tree: Any,
         new_steps: Sequence[Steps] = (), keep_steps_from: int = 0) -> str:
  """Write a checkpoint for `iteration` atomically; return its path.

  The newest earlier checkpoint is kept (the fallback if this one is ever
  damaged); every other checkpoint goes, and so do the chunks neither uses.

  Args:
    directory: the run's checkpoint directory.
    iteration: names the checkpoint.
    meta: JSON-able state (counters, config, rows, RNG states).
    tree: pytree of arrays (agent state).
    new_steps: replay steps added since the previous checkpoint, as
      FrameReplay.steps returns them (consecutive pieces); written once, as
      one chunk.
    keep_steps_from: the oldest replay step still needed; the previous
      checkpoint's chunks that end at or before it are not used by this one.

  Raises:
    ValueError: if the new steps do not continue the previous checkpoint's.
    WriteError: the disk is full (or another OSError); what this save wrote
      is removed and the previous checkpoint stays intact.
  """
  os.makedirs(directory, exist_ok=True)
  previous, previous_meta = _previous(directory, iteration)
  # Before writing: the disk then holds at most the previous checkpoint and
  # the new chunk (what zoo.experiment's disk check counts).
  for _, path in _iterations(directory):
    if path != previous:
      _remove(path)
  for name in os.listdir(directory):  # Left by killed processes.
    if name.startswith('.tmp-'):
      shutil.rmtree(os.path.join(directory, name), ignore_errors=True)
  previous_files = previous_meta.get('replay_files', {})
  replay_dir = os.path.join(directory, REPLAY_DIR)
  if os.path.isdir(replay_dir):
    for name in os.listdir(replay_dir):
      if name not in previous_meta.get('replay_chunks', []):
        _remove(os.path.join(replay_dir, name))
  chunks = [name for name in previous_meta.get('replay_chunks', [])
            if _chunk_range(name)[1] > keep_steps_from]
  if new_steps:
    begin = new_steps[0][0]
    if chunks and _chunk_range(chunks[-1])[1] != begin:
      raise ValueError(f'New replay steps start at {begin}, the checkpoint '
                       f'{previous} ends at {_chunk_range(chunks[-1])[1]}.')
  final = os.path.join(directory, f'iteration_{iteration:06d}')
  temp = os.path.join(directory,
                      f'.tmp-iteration_{iteration:06d}-{os.getpid()}')
  new_chunk = None
  try:
    replay_files = {}
    for name in chunks:
      for file_name in sorted(os.listdir(os.path.join(replay_dir, name))):
        key = f'{name}/{file_name}'
        replay_files[key] = previous_files[key]
    if new_steps:
      new_chunk, digests = _write_chunk(directory, iteration, new_steps)
      chunks.append(new_chunk)
      replay_files.update(digests)
    shutil.rmtree(temp, ignore_errors=True)
    os.makedirs(temp)
    paths, names, leaves = _named_leaves(tree)
    _fault(iteration, _TREE)
    with open(os.path.join(temp, _TREE), 'wb') as f:
      np.savez(f, **{name: np.asarray(leaf)
                     for name, leaf in zip(names, leaves)})
      f.flush()
      os.fsync(f.fileno())
    meta = dict(meta, format=FORMAT, tree_paths=paths, replay_chunks=chunks,
                files={_TREE: _file_digest(os.path.join(temp, _TREE))},
                replay_files=replay_files)
    meta['meta_sha256'] = _meta_digest(meta)
    _fault(iteration, _META)
    with open(os.path.join(temp, _META), 'w') as f:
      json.dump(meta, f, sort_keys=True)
      f.flush()
      os.fsync(f.fileno())
    _fsync_dir(temp)
    os.rename(temp, final)
    _fsync_dir(directory)
  except OSError as e:
    shutil.rmtree(temp, ignore_errors=True)
    if new_chunk is not None:  # No checkpoint uses it.
      shutil.rmtree(os.path.join(replay_dir, new_chunk), ignore_errors=True)
    for name in os.listdir(replay_dir) if os.path.isdir(replay_dir) else ():
      if name.startswith('.tmp-'):
        shutil.rmtree(os.path.join(replay_dir, name), ignore_errors=True)
    kept = (f'the previous checkpoint, {previous}, is intact: free some '
            'disk space (or fix the cause) and rerun the same command to '
            'resume from it' if previous else
            'there is no earlier checkpoint: free some disk space (or fix '
            'the cause) and rerun the same command to start again')
    raise WriteError(
        f'Cannot write the checkpoint of iteration {iteration} in '
        f'{directory} ({e}); what it wrote was removed, and {kept}.',
        e.errno) from e
  return final


def load_meta(path: str) -> Dict[str, Any]:
  """Return a checkpoint's meta; FormatError if another format wrote it."""
  with open(os.path.join(path, _META)) as f:
    meta = json.load(f)
  if meta.get('format') != FORMAT:
    raise FormatError(
        f'The checkpoint {path} has format {meta.get("format", 0)}; this code '
        f'reads format {FORMAT} only. Add --restart to start the run over '
        "(moves the run's files aside), or resume it with the code that "
        'wrote it.')
  return meta


# Checkpoints verified in this process: path -> what their files looked like.
_VERIFIED: Dict[str, Any] = {}


def _check_file(path: str, file: str, size: int, digest: str
                ) -> Optional[Damage]:
  try:
    actual = os.path.getsize(file)
  except OSError:
    return Damage(path, file, 'missing')
  if actual == 0 < size:
    return Damage(path, file, f'empty (0 bytes, {size:,} written)')
  if actual < size:
    return Damage(path, file, f'truncated ({actual:,} bytes, {size:,} '
                  'written)')
  if actual > size:
    return Damage(path, file, f'longer than written ({actual:,} bytes, '
                  f'{size:,} written)')
  if _file_digest(file)[1] != digest:
    return Damage(path, file, 'corrupted (its content does not match the '
                  'SHA-256 recorded when it was written)')
  return None


def _listed_files(path: str, meta: Dict[str, Any]) -> Dict[str, List[Any]]:
  """Return {file path: [size, SHA-256]} of what a checkpoint needs."""
  replay_dir = os.path.join(os.path.dirname(path), REPLAY_DIR)
  listed = {os.path.join(path, name): value
            for name, value in meta.get('files', {}).items()}
  listed.update({os.path.join(replay_dir, name): value
                 for name, value in meta.get('replay_files', {}).items()})
  return listed


def _stats(files) -> Tuple[Any, ...]:
  out = []
  for file in files:
    try:
      stat = os.stat(file)
    except OSError:
      return ()
    out.append((file, stat.st_size, stat.st_mtime_ns, stat.st_ino))
  return tuple(out)


def verify(path: str) -> Optional[Damage]:
  """Return the first damage found in the checkpoint at `path`, or None.

  Checks that meta.json parses and matches its own SHA-256, and that every
  file it lists (tree.npz, the replay chunks' arrays) has the size and
  SHA-256 recorded when it was written. Another format is not damage:
  it passes here, and load_meta refuses it.
  """
  meta_file = os.path.join(path, _META)
  try:
    with open(meta_file, 'rb') as f:
      text = f.read()
  except FileNotFoundError:
    return Damage(path, meta_file, 'missing')
  except OSError as e:
    return Damage(path, meta_file, f'unreadable ({e.strerror})')
  if not text:
    return Damage(path, meta_file, 'empty (0 bytes)')
  try:
    meta = json.loads(text)
    if not isinstance(meta, dict):
      raise ValueError('not an object')
  except ValueError:  # UnicodeDecodeError and JSONDecodeError too.
    return Damage(path, meta_file, f'truncated or corrupted ({len(text):,} '
                  'bytes that are not a complete JSON object)')
  if meta.get('format') != FORMAT:
    return None
  if meta.get('meta_sha256') != _meta_digest(meta):
    return Damage(path, meta_file, 'corrupted (its content does not match '
                  'the SHA-256 recorded in it)')
  listed = _listed_files(path, meta)
  stats = _stats([meta_file] + sorted(listed))
  if stats and _VERIFIED.get(path) == stats:
    return None
  for file in sorted(listed, key=lambda f: (not f.startswith(path), f)):
    damage = _check_file(path, file, *listed[file])
    if damage:
      return damage
  _VERIFIED[path] = stats
  return None


def newest_intact(directory: str) -> Tuple[Optional[str], List[Damage]]:
  """Return (the newest verified checkpoint or None, the damaged newer ones).

  Checkpoints are tried newest first; each damaged one is listed with its
  first damaged file.
  """
  damages = []
  for _, path in _iterations(directory):
    damage = verify(path)
    if damage is None:
      return path, damages
    damages.append(damage)
  return None, damages


def describe(damages: Sequence[Damage]) -> str:
  """Return 'FILE is REASON; ...' for damaged checkpoints."""
  return '; '.join(str(d) for d in damages)


def fallback_warning(path: str, damages: Sequence[Damage]) -> str:
  """Return the warning printed when newer checkpoints were skipped."""
  return (f'Warning: the newest checkpoint is damaged: {describe(damages)}. '
          f'Using the previous one, {path}.')


def no_intact_message(directory: str, damages: Sequence[Damage]) -> str:
  """Return why `directory` has no usable checkpoint (callers add choices)."""
  return (f'No intact checkpoint in {directory}: {describe(damages)}.')


def choose(checkpoint_dir: str, iteration: Optional[int] = None
           ) -> Tuple[str, List[Damage]]:
  """Return (verified checkpoint path, damaged newer ones skipped).

  Args:
    checkpoint_dir: a run's checkpoint directory.
    iteration: a kept checkpoint's iteration; None: the newest intact one.

  Raises:
    DamagedError: none intact (or the one asked for is damaged).
    ValueError: no checkpoint at all, or none of that iteration.
  """
  kept = [number for number, _ in _iterations(checkpoint_dir)]
  if iteration is not None:
    path = os.path.join(checkpoint_dir, f'iteration_{iteration:06d}')
    if iteration not in kept:
      raise ValueError(
          f'No checkpoint of iteration {iteration} in {checkpoint_dir}; it '
          'keeps ' + (', '.join(f'--iteration={n}' for n in sorted(kept))
                      or 'none') + '.')
    damage = verify(path)
    if damage:
      raise DamagedError(f'The checkpoint {path} is damaged: {damage}.',
                         [damage])
    return path, []
  path, damages = newest_intact(checkpoint_dir)
  if path is None:
    if damages:
      raise DamagedError(no_intact_message(checkpoint_dir, damages), damages)
    raise ValueError(f'No checkpoint in {checkpoint_dir!r} (a run writes '
                     'iteration_NNNNNN directories there).')
  return path, damages


def _unreadable(path: str, error: Exception) -> DamagedError:
  damage = Damage(path, path, f'unreadable ({type(error).__name__}: {error})')
  return DamagedError(f'The checkpoint {damage}.', [damage])


def _read(path: str, meta: Dict[str, Any], names: Optional[Sequence[str]]
          ) -> Tuple[Dict[str, np.ndarray], List[Steps]]:
  """Read a checkpoint's tree arrays (those in `names`, None: all), chunks."""
  with np.load(os.path.join(path, _TREE), allow_pickle=False) as saved:
    arrays = {name: saved[name] for name in saved.files
              if names is None or name in names}
  directory = os.path.dirname(path)
  chunks = []
  for name in meta.get('replay_chunks', []):
    chunk_dir = os.path.join(directory, REPLAY_DIR, name)
    files = sorted(key.split('/')[1] for key in meta['replay_files']
                   if key.startswith(name + '/'))
    chunks.append((_chunk_range(name)[0], {
        file[:-len('.npy')]: _load_array(os.path.join(chunk_dir, file))
        for file in files if file.endswith('.npy')}))
  return arrays, chunks


def load(path: str, template: Any) -> Checkpoint:
  """Return the checkpoint at `path`, its tree shaped like `template`.

  Raises:
    DamagedError: a file fails verification or cannot be read.
    FormatError: another format wrote it.
    ValueError: the checkpoint holds a differently structured state.
  """
  damage = verify(path)
  if damage:
    raise DamagedError(f'The checkpoint {path} is damaged: {damage}.',
                       [damage])
  try:
    meta = load_meta(path)
  except (OSError, ValueError) as e:
    if isinstance(e, FormatError):
      raise
    raise _unreadable(path, e) from e
  try:
    arrays, chunks = _read(path, meta, None)
  except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
    raise _unreadable(path, e) from e
  leaves, treedef = jax.tree.flatten(template)
  _, names, _ = _named_leaves(template)
  if sorted(names) != sorted(arrays):
    raise ValueError(
        f'Checkpoint {path} holds a differently structured state (another '
        'network or optimizer?): leaves only in the checkpoint: '
        f'{sorted(set(arrays) - set(names))[:5]}, only expected: '
        f'{sorted(set(names) - set(arrays))[:5]}.')
  loaded = [arrays[name] for name in names]
  for name, want, got in zip(names, leaves, loaded):
    if np.shape(want) != got.shape:
      raise ValueError(f'Checkpoint {path}: leaf {name} has shape '
                       f'{got.shape}, expected {np.shape(want)}.')
  tree = jax.tree.unflatten(treedef, loaded)
  return Checkpoint(meta, tree, chunks)


def load_params(checkpoint_dir: str, iteration: Optional[int] = None,
                path: Optional[str] = None
                ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
  """Return (network parameters, settings) of a run's checkpoint.

  The newest intact checkpoint, or that of `iteration` (or at `path`, as
  `choose` returned it). The parameters are the online network's Haiku
  params (nested dicts of arrays, as `hk.transform(network_fn).init` returns
  them), read by name from the checkpoint without rebuilding the agent. The
  settings are the run's (`zoo.settings.Settings.checkpoint_config()`: every
  setting but paths, plus 'agent' and 'suite'), enough to rebuild the network:

    params, settings = checkpoint.load_params(
        'runs/cr_dqn/pong/seed_1/checkpoints')
    suite = suites.suite_by_name(settings['suite'])
    network = hk.transform(suite.network_fn(
        settings_lib.Settings.from_dict(settings), num_actions))
    network.apply(params, None, observations)

  Raises:
    ValueError: no checkpoint there (DamagedError: none intact;
      FormatError: another format).
  """
  if path is None:
    path, _ = choose(checkpoint_dir, iteration)
  meta = load_meta(path)
  names = {'/'.join(str(k) for k in p): p for p in meta['tree_paths']
           if p[0] == 'params'}
  try:
    arrays, _ = _read(path, {}, list(names))
  except (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile) as e:
    raise _unreadable(path, e) from e
  params: Dict[str, Any] = {}
  for name, tree_path in names.items():
    node = params
    for key in tree_path[1:-1]:
      node = node.setdefault(key, {})
    node[tree_path[-1]] = arrays[name]
  return params, meta['config']


def _load_array(path: str) -> np.ndarray:
  # Memory-mapped so that restoring a 7 GB replay does not need 14 GB.
  try:
    return np.load(path, mmap_mode='r', allow_pickle=False)
  except ValueError:  # Empty arrays cannot be mapped.
    return np.load(path, allow_pickle=False)
