"""Run checkpoints read back: verified, chosen, loaded.

A checkpoint is trusted only once `verify` found every file its meta lists
with its recorded size and hash.
"""

import json
import os
from typing import Any, Dict, List, Optional, Sequence, Tuple
import zipfile

import jax
import numpy as np

from zoo.storage import checkpoint


# Checkpoints verified in this process: path -> what their files looked like.
_VERIFIED: Dict[str, Any] = {}


def _fault(file: str, size: int, digest: str) -> Optional[str]:
  """Return how `file` differs from what was written, or None."""
  try:
    actual = os.path.getsize(file)
  except OSError:
    return 'missing'
  if actual != size:
    how = ('empty' if actual == 0 else 'truncated' if actual < size
           else 'longer than written')
    return f'{how} ({actual:,} bytes, {size:,} written)'
  if checkpoint.file_digest(file)[1] != digest:
    return ('corrupted (its content does not match the SHA-256 recorded '
            'when it was written)')
  return None


def verify(path: str) -> Optional[checkpoint.Damage]:
  """Return the first damage found in the checkpoint at `path`, or None.

  Another format is not damage (load_meta refuses it).
  """
  meta_file = os.path.join(path, checkpoint.META_FILE)
  text = b''
  try:
    with open(meta_file, 'rb') as f:
      text = f.read()
    meta = json.loads(text)
    if not isinstance(meta, dict):
      raise ValueError('not an object')
  except FileNotFoundError:
    return checkpoint.Damage(path, meta_file, 'missing')
  except OSError as e:
    return checkpoint.Damage(path, meta_file, f'unreadable ({e.strerror})')
  except ValueError:  # UnicodeDecodeError and JSONDecodeError too.
    return checkpoint.Damage(path, meta_file, (
        f'truncated or corrupted ({len(text):,} bytes that are not a '
        'complete JSON object)') if text else 'empty (0 bytes)')
  if meta.get('format') != checkpoint.FORMAT:
    return None
  if meta.get('meta_sha256') != checkpoint.meta_digest(meta):
    return checkpoint.Damage(
        path, meta_file, 'corrupted (its content does not match '
        'the SHA-256 recorded in it)')
  replay_dir = os.path.join(os.path.dirname(path), checkpoint.REPLAY_DIR)
  listed = {os.path.join(path, name): value
            for name, value in meta.get('files', {}).items()}
  listed.update({os.path.join(replay_dir, name): value
                 for name, value in meta.get('replay_files', {}).items()})
  try:  # Unchanged files (size, time, inode) are not hashed again.
    stats = tuple((file, s.st_size, s.st_mtime_ns, s.st_ino)
                  for file in [meta_file] + sorted(listed)
                  for s in [os.stat(file)])
  except OSError:
    stats = ()
  if stats and _VERIFIED.get(path) == stats:
    return None
  for file in sorted(listed, key=lambda f: (not f.startswith(path), f)):
    fault = _fault(file, *listed[file])
    if fault:
      return checkpoint.Damage(path, file, fault)
  _VERIFIED[path] = stats
  return None


def newest_intact(directory: str
                  ) -> Tuple[Optional[str], List[checkpoint.Damage]]:
  """Return (the newest verified checkpoint or None, the damaged newer ones)."""
  damages = []
  for _, path in checkpoint.iterations(directory):
    damage = verify(path)
    if damage is None:
      return path, damages
    damages.append(damage)
  return None, damages


def fallback_warning(path: str, damages: Sequence[checkpoint.Damage]) -> str:
  """Return the warning printed when newer checkpoints were skipped."""
  return (f'Warning: the newest checkpoint is damaged: '
          f'{"; ".join(map(str, damages))}. Using the previous one, {path}.')


def no_intact_message(directory: str,
                      damages: Sequence[checkpoint.Damage]) -> str:
  """Return why `directory` has no usable checkpoint (callers add choices)."""
  damaged = '; '.join(map(str, damages))
  return f'No intact checkpoint in {directory}: {damaged}.'


def choose(checkpoint_dir: str, iteration: Optional[int] = None
           ) -> Tuple[str, List[checkpoint.Damage]]:
  """Return (verified checkpoint path, damaged newer ones skipped).

  `iteration`: a kept checkpoint's iteration; None: the newest intact one.

  Raises:
    DamagedError: none intact (or the one asked for is damaged).
    ValueError: no checkpoint at all, or none of that iteration.
  """
  kept = [number for number, _ in checkpoint.iterations(checkpoint_dir)]
  if iteration is not None:
    path = os.path.join(checkpoint_dir, f'iteration_{iteration:06d}')
    if iteration not in kept:
      raise ValueError(
          f'No checkpoint of iteration {iteration} in {checkpoint_dir}; it '
          'keeps ' + (', '.join(f'--iteration={n}' for n in sorted(kept))
                      or 'none') + '.')
    _check_intact(path)
    return path, []
  path, damages = newest_intact(checkpoint_dir)
  if path is None:
    if damages:
      raise checkpoint.DamagedError(
          no_intact_message(checkpoint_dir, damages), damages)
    raise ValueError(f'No checkpoint in {checkpoint_dir!r} (a run writes '
                     'iteration_NNNNNN directories there).')
  return path, damages


def _check_intact(path: str) -> None:
  """Raise DamagedError naming the first damage of the checkpoint at `path`."""
  damage = verify(path)
  if damage:
    raise checkpoint.DamagedError(
        f'The checkpoint {path} is damaged: {damage}.', [damage])


# What reading a verified checkpoint's files may still raise.
_READ_ERRORS = (OSError, EOFError, ValueError, KeyError, zipfile.BadZipFile)


def _unreadable(path: str, error: Exception) -> checkpoint.DamagedError:
  damage = checkpoint.Damage(
      path, path, f'unreadable ({type(error).__name__}: {error})')
  return checkpoint.DamagedError(f'The checkpoint {damage}.', [damage])


def _read(path: str, meta: Dict[str, Any], names: Optional[Sequence[str]]
          ) -> Tuple[Dict[str, np.ndarray], List[checkpoint.Steps]]:
  """Read a checkpoint's tree arrays (those in `names`, None: all), chunks."""
  with np.load(
      os.path.join(path, checkpoint.TREE_FILE), allow_pickle=False) as saved:
    arrays = {name: saved[name] for name in saved.files
              if names is None or name in names}
  directory = os.path.dirname(path)
  chunks = []
  for name in meta.get('replay_chunks', []):
    chunk_dir = os.path.join(directory, checkpoint.REPLAY_DIR, name)
    files = sorted(key.split('/')[1] for key in meta['replay_files']
                   if key.startswith(name + '/'))
    chunks.append((checkpoint.chunk_range(name)[0], {
        file[:-len('.npy')]: _load_array(os.path.join(chunk_dir, file))
        for file in files if file.endswith('.npy')}))
  return arrays, chunks


def load(path: str, template: Any) -> checkpoint.Checkpoint:
  """Return the checkpoint at `path`, its tree shaped like `template`.

  Raises:
    DamagedError: a file fails verification or cannot be read.
    FormatError: another format wrote it.
    ValueError: the checkpoint holds a differently structured state.
  """
  _check_intact(path)
  try:
    meta = checkpoint.load_meta(path)
    arrays, chunks = _read(path, meta, None)
  except checkpoint.FormatError:
    raise
  except _READ_ERRORS as e:
    raise _unreadable(path, e) from e
  leaves, treedef = jax.tree.flatten(template)
  _, names, _ = checkpoint.named_leaves(template)
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
  return checkpoint.Checkpoint(meta, jax.tree.unflatten(treedef, loaded),
                               chunks)


def load_params(checkpoint_dir: str, iteration: Optional[int] = None,
                path: Optional[str] = None
                ) -> Tuple[Dict[str, Any], Dict[str, Any]]:
  """Return (online network parameters, settings) of a run's checkpoint.

  The newest intact checkpoint, or that of `iteration` (or at `path`, as
  `choose` returned it). The parameters are keyed as `hk.transform(...).init`
  returns them; the settings (`Settings.checkpoint_config()`) rebuild the
  network (docs/running.md).

  ValueError if there is none (DamagedError: none intact; FormatError).
  """
  if path is None:
    path, _ = choose(checkpoint_dir, iteration)
  meta = checkpoint.load_meta(path)
  names = {'/'.join(str(k) for k in p): p for p in meta['tree_paths']
           if p[0] == 'params'}
  try:
    arrays, _ = _read(path, {}, list(names))
  except _READ_ERRORS as e:
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
