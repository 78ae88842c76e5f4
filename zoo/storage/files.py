"""Atomic file writes: a crash or a kill never leaves a half-written file."""

import contextlib
import csv
import errno
import io
import os
import tempfile
from typing import Any, Dict, Iterator, Sequence, Union


def make_writable_directory(directory: str) -> None:
  """Create `directory` if needed; OSError if no file can be written there."""
  os.makedirs(directory, exist_ok=True)
  check_writable_directory(directory)


def check_writable_directory(directory: str) -> None:
  """Check that `directory` can be written (made if missing), else OSError."""
  path = os.path.abspath(directory)
  while not os.path.exists(path):  # Probe where it would be made.
    path = os.path.dirname(path)
  if not os.path.isdir(path):
    raise NotADirectoryError(errno.ENOTDIR, os.strerror(errno.ENOTDIR), path)
  with tempfile.NamedTemporaryFile(dir=path, prefix='.write-probe-'):
    pass


@contextlib.contextmanager
def atomic_path(path: str) -> Iterator[str]:
  """Yield a temporary path beside `path`; move it onto `path` on success.

  Its name ends in '.tmp': scans for '*.csv' never pick up a killed writer's.
  """
  directory = os.path.dirname(os.path.abspath(path))
  os.makedirs(directory, exist_ok=True)
  fd, tmp = tempfile.mkstemp(dir=directory,
                             prefix=f'.{os.path.basename(path)}.',
                             suffix='.tmp')
  os.close(fd)
  try:
    yield tmp
    os.chmod(tmp, 0o644)  # mkstemp makes files private; results are shared.
    os.replace(tmp, path)
  finally:
    if os.path.exists(tmp):
      os.remove(tmp)


def fsync_path(path: str) -> None:
  """Flush a file or a directory (its entries: a rename) to the disk."""
  fd = os.open(path, os.O_RDONLY)
  try:
    os.fsync(fd)
  finally:
    os.close(fd)


def write_atomically(path: str, data: Union[str, bytes]) -> None:
  """Write text or bytes to `path` atomically (temp file, fsync, rename)."""
  with atomic_path(path) as tmp:
    with open(tmp, 'wb') as f:
      f.write(data.encode() if isinstance(data, str) else data)
      f.flush()
      os.fsync(f.fileno())


def write_csv_atomically(path: str, columns: Sequence[str],
                         rows: Sequence[Dict[str, Any]]) -> None:
  """Write a header and rows (dicts keyed by `columns`) as CSV, atomically."""
  buffer = io.StringIO()
  writer = csv.DictWriter(buffer, fieldnames=list(columns))
  writer.writeheader()
  writer.writerows(rows)
  write_atomically(path, buffer.getvalue())
