"""One run, one directory: where it resumes, what it may overwrite, its lock.

docs/data-safety.md tells the rules.
"""

import contextlib
import fcntl
import json
import os
import socket
import sys
import time
from typing import Any, Callable, Dict, Iterator, List, Optional, Tuple

from zoo.storage import checkpoint
from zoo.storage import checkpoint_read
from zoo.storage import results_csv
from zoo.storage import run_json

LOCK_FILE = 'run.lock'
# The number of an open descriptor of LOCK_FILE, locked by the parent process
# (a launcher) and handed down: the run takes that lock over.
LOCK_FD_ENV = 'ZOO_RUN_LOCK_FD'


def _stderr(text: str) -> None:
  print(text, file=sys.stderr, flush=True)


class Refused(ValueError):
  """The run must not start as asked; the message says why and the fix."""


def check_owner(meta: Dict[str, Any], checkpoint_dir: str,
                results_csv_path: str) -> None:
  """Raise Refused if the checkpoint was written for another results CSV.

  A run directory moved or copied as a whole is accepted.
  """
  recorded = meta['results_csv_path']
  current = os.path.abspath(results_csv_path) if results_csv_path else ''
  if recorded == current:
    return
  if recorded and current and (
      os.path.relpath(recorded, meta['checkpoint_dir']) ==
      os.path.relpath(current, os.path.abspath(checkpoint_dir))):
    return  # The run directory was moved.
  flag = '--results_csv_path=' + (recorded or "''")
  raise Refused(
      f'The checkpoint directory {checkpoint_dir} belongs to another run: '
      f'its results CSV is {recorded or f"none ({flag})"}, not '
      f'{current or "none"}. To continue that run, pass {flag}; for a new '
      'run, pass a new --checkpoint_dir (by default the checkpoints lie '
      'beside the results CSV, in its directory\'s checkpoints/).')


def check_rows(results_csv_path: str, checkpoint_dir: str,
               start_iteration: int, damages: List[checkpoint.Damage]) -> None:
  """Raise Refused if starting at `start_iteration` drops finished rows.

  The CSV may hold one row more than the checkpoint (a stop between the two
  writes) and, after a fallback from damaged checkpoints, the rows those held.
  """
  try:
    iterations = results_csv.iterations(results_csv_path)
  except (OSError, ValueError, KeyError, TypeError) as e:
    raise Refused(f'Cannot read the results CSV {results_csv_path} ({e}); '
                  'move it aside, or add --restart (moves it aside for '
                  'you).') from e
  last = max(iterations, default=0)
  if last <= max([start_iteration] + [
      checkpoint.iteration_of(d.path) + 1 for d in damages]):
    return
  if not checkpoint_dir:
    why = 'this run has no --checkpoint_dir, so it starts at iteration 0'
  elif start_iteration == 0:
    why = (f'{checkpoint_dir} holds no checkpoint, so the run starts at '
           'iteration 0')
  else:
    why = (f'the newest intact checkpoint in {checkpoint_dir} resumes at '
           f'iteration {start_iteration}')
  raise Refused(
      f'The results CSV {results_csv_path} holds iterations 0..{last}, but '
      f'{why}: going on would replace the finished rows of iterations '
      f'{start_iteration}..{last}. To keep them, pass the --checkpoint_dir '
      'of the run that wrote this CSV (or put its checkpoints back); to '
      'start over, add --restart (moves the CSV to '
      f'{results_csv_path}.<time>.bak; nothing is deleted).')


def repair_csv(damaged: results_csv.DamagedError, path: Optional[str],
               meta: Optional[Dict[str, Any]], start: int,
               damages: List[checkpoint.Damage],
               warn: Callable[[str], None]) -> None:
  """Rewrite a damaged results CSV from the checkpoint's rows 0..start - 1.

  Raises:
    Refused: no checkpoint holds the rows, or the CSV holds finished rows
      past the damaged line that resuming at `start` would replace.
  """
  csv_path = damaged.path
  what = (f'The results CSV {csv_path} is damaged at line {damaged.line} '
          f'({damaged.reason})')
  if meta is None:
    raise Refused(
        f'{what}, and no checkpoint holds its rows to rewrite it from. To '
        'keep its finished rows, pass the --checkpoint_dir of the run that '
        f'wrote it; to start over, add --restart (moves it to '
        f'{csv_path}.<time>.bak; nothing is deleted).')
  rows = meta['rows'][:start]
  # Rows are iterations 0, 1, ... in order, the header on line 1; the rows
  # after the damaged one must be rows that resuming at `start` redoes.
  last = damaged.line - 2
  try:
    last = max([last] + results_csv.iterations(csv_path))
  except (OSError, ValueError, KeyError, TypeError):
    pass
  allowed = max([start] + [checkpoint.iteration_of(d.path) + 1
                           for d in damages])
  if last > allowed:
    raise Refused(
        f'{what}; its newest intact checkpoint {path} holds the rows of '
        f'iterations 0..{start - 1} only, and rewriting the CSV from it would '
        f'drop the finished rows up to iteration {last}. Repair line '
        f'{damaged.line} by hand (it is iteration {damaged.line - 2}\'s row), '
        'or add --restart to start over (moves it to '
        f'{csv_path}.<time>.bak; nothing is deleted).')
  results_csv.write_rows(csv_path, rows)
  warn(f'{what}: rewrote its rows of iterations 0..{start - 1} from the '
       f'checkpoint {path}.')


def resume_point(checkpoint_dir: str, results_csv_path: str,
                 warn: Callable[[str], None] = _stderr
                 ) -> Tuple[Optional[str], Optional[Dict[str, Any]]]:
  """Return (checkpoint to resume, its meta), or (None, None): start at 0.

  A damaged results CSV is rewritten from the checkpoint (`repair_csv`).

  Raises:
    Refused: another run's checkpoints, none intact, finished rows that
      would be replaced, or a damaged results CSV that no checkpoint can
      rewrite; the message names the files and the fix.
  """
  path, damages = (checkpoint_read.newest_intact(checkpoint_dir)
                   if checkpoint_dir else (None, []))
  if path is None and damages:
    run_dir = os.path.dirname(results_csv_path or '')
    where = f'the run directory {run_dir}' if run_dir else checkpoint_dir
    raise Refused(
        checkpoint_read.no_intact_message(checkpoint_dir, damages) +
        f' Either pass another --checkpoint_dir, or move {where} aside, or '
        "add --restart (moves the run's files aside to <name>.<time>.bak) to "
        'start over.')
  try:
    meta = checkpoint.load_meta(path) if path else None
  except checkpoint.FormatError as e:
    raise Refused(str(e)) from e
  if meta is not None:
    check_owner(meta, checkpoint_dir, results_csv_path)
  start = meta.get('iteration', 0) if meta else 0
  damaged = results_csv.damage(results_csv_path)
  if damaged:
    repair_csv(damaged, path, meta, start, damages, warn)
  check_rows(results_csv_path, checkpoint_dir, start, damages)
  if damages:
    warn(checkpoint_read.fallback_warning(path, damages) +
         f' The run goes on from iteration {start}.')
  return path, meta


def restart(results_csv_path: str, checkpoint_dir: str, tensorboard_dir: str,
            log: Callable[[str], None] = _stderr) -> List[Tuple[str, str]]:
  """Move a run's files aside to <name>.<time>.bak; return (from, to) pairs."""
  stamp = time.strftime('%Y%m%d-%H%M%S')
  paths = [results_csv_path, checkpoint_dir, tensorboard_dir]
  if results_csv_path:
    paths.insert(1, run_json.path_next_to(results_csv_path))
  moved = []
  for path in paths:
    empty = os.path.isdir(path or '') and not os.listdir(path)
    if path and os.path.exists(path) and not empty:  # Empty: nothing to keep.
      target, number = f'{path}.{stamp}.bak', 1
      while os.path.exists(target):
        number += 1
        target = f'{path}.{stamp}-{number}.bak'
      os.rename(path, target)
      moved.append((path, target))
      log(f'--restart: moved {path} to {target}')
  return moved


def _recorded_holder(fd: int) -> Optional[str]:
  """Return who the lock's file says holds it (None: nobody wrote it yet)."""
  try:
    text = os.pread(fd, 4096, 0).decode()
  except (OSError, ValueError):
    return None
  if not text:
    return None
  try:
    found = json.loads(text)
    since = time.localtime(found['since'])
    return (f'PID {found["pid"]} on {found["host"]}, since '
            f'{time.strftime("%Y-%m-%d %H:%M:%S %Z", since)}')
  except (OSError, ValueError, KeyError, TypeError):
    return 'a process whose record is unreadable'


def _holder(fd: int) -> str:
  """Return who holds the lock, as its holder wrote it."""
  # The holder writes its record just after taking the lock: give it that
  # moment, so that two runs started together name each other.
  deadline = time.monotonic() + 2.0
  while (found := _recorded_holder(fd)) is None and time.monotonic() < deadline:
    time.sleep(0.02)
  return found or 'a process that is starting'


def _same_file(fd: int, path: str) -> bool:
  try:
    return os.path.samestat(os.fstat(fd), os.stat(path))
  except OSError:
    return False


def _inherited(path: str) -> Optional[int]:
  """Return the handed-down descriptor of `path`'s lock (LOCK_FD_ENV)."""
  try:
    fd = int(os.environ.get(LOCK_FD_ENV, ''))
  except ValueError:
    return None
  return fd if _same_file(fd, path) else None


def lock(directory: str, log: Callable[[str], None] = _stderr) -> int:
  """Take the exclusive lock of a run directory (made if missing); return it.

  A lock file left by a killed holder is taken over, said in one line to `log`.

  Raises:
    Refused: another process holds it; the message names that process.
  """
  path = os.path.join(directory, LOCK_FILE)
  fd = _inherited(path)
  handed_down = fd is not None
  while fd is None:
    os.makedirs(directory, exist_ok=True)
    fd = os.open(path, os.O_RDWR | os.O_CREAT, 0o644)
    try:
      fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
      holder = _holder(fd)
      os.close(fd)
      raise Refused(
          f'Another process is running in {directory}: {holder} (it holds '
          f'{path}). Wait for it to end, or stop it; one process at a time '
          'writes a run directory.') from None
    if not _same_file(fd, path):  # Its holder removed it meanwhile: again.
      os.close(fd)
      fd = None
  fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
  stale = None if handed_down else _recorded_holder(fd)
  if stale:
    log(f'{path} was left by {stale}, which is gone (killed, or its machine '
        'stopped): this process takes the run directory over.')
  record_holder(fd, os.getpid())
  return fd


def record_holder(fd: int, pid: int) -> None:
  """Write into the lock's file who holds it (what a refusal names)."""
  os.ftruncate(fd, 0)
  os.pwrite(fd, json.dumps({'pid': pid, 'host': socket.gethostname(),
                            'since': time.time()}).encode(), 0)


def unlock(fd: int, directory: str) -> None:
  """Release `lock`'s lock (its file is removed unless it was handed down)."""
  path = os.path.join(directory, LOCK_FILE)
  if fd != _inherited(path) and _same_file(fd, path):
    os.remove(path)
  os.close(fd)


def holder(directory: str) -> Optional[str]:
  """Return who holds the run directory's lock (None: nobody)."""
  try:
    fd = os.open(os.path.join(directory, LOCK_FILE), os.O_RDONLY)
  except OSError:
    return None
  try:
    fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    return None
  except BlockingIOError:
    return _holder(fd)
  finally:
    os.close(fd)


def directory_of(results_csv_path: str, checkpoint_dir: str,
                 tensorboard_dir: str) -> Optional[str]:
  """Return the run directory: the CSV's, else where the others lie."""
  path = results_csv_path or checkpoint_dir or tensorboard_dir
  return os.path.dirname(os.path.abspath(path)) if path else None


@contextlib.contextmanager
def held(directories: List[str]) -> Iterator[None]:
  """Hold the locks of run directories; remove those left empty after."""
  made = set()  # What locking makes, removed deepest first.
  for path in map(os.path.abspath, directories):
    while not os.path.exists(path):
      made.add(path)
      path = os.path.dirname(path)
  taken = []
  try:
    for directory in directories:
      taken.append((lock(directory), directory))
    yield
  finally:
    for fd, directory in taken:
      unlock(fd, directory)
    for directory in sorted(made, key=len, reverse=True):
      with contextlib.suppress(OSError):
        os.rmdir(directory)  # Only if empty.
