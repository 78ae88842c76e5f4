"""Carry a campaign's results between machines: pack them, ingest them.

An archive holds each run's small files (results.csv, run.json, exit.json,
run.log) under their paths below the campaign's root, not the checkpoints;
ingesting it into another root adds the runs there, keeping a CSV that
already holds more iterations.
"""

import os
import tarfile
from typing import Sequence

from scripts.analysis import run_data
from scripts.campaign import run_record as run_lib
from zoo.storage import files

KEPT = (run_lib.RESULTS_FILE, 'run.json', run_lib.EXIT_FILE,
        run_lib.LOG_FILE)


def pack(runs: Sequence[run_lib.Run], root: str, path: str) -> int:
  """Write the runs' kept files into the tar.gz `path`; return how many."""
  root = os.path.abspath(root)
  folders = sorted({d for r in runs
                    for d in r.seed_dirs(root) + [r.home(root)]})
  count = 0
  with tarfile.open(path, 'w:gz') as archive:
    for folder in folders:
      for name in KEPT:
        if os.path.isfile(os.path.join(folder, name)):
          archive.add(os.path.join(folder, name),
                      os.path.relpath(os.path.join(folder, name), root))
          count += 1
  return count


def ingest(path: str, root: str) -> int:
  """Unpack an archive of pack() into root; return the files written.

  Raises ValueError naming the problem for a member that is not one of the
  kept files below the root (refused before anything is written).
  """
  root = os.path.abspath(root)
  with tarfile.open(path, 'r:gz') as archive:
    members = archive.getmembers()
    for member in members:
      target = os.path.abspath(os.path.join(root, member.name))
      if (not member.isfile() or os.path.basename(member.name) not in KEPT
          or not target.startswith(root + os.sep)):
        raise ValueError(f'{path}: {member.name!r} is not a file of a run '
                         f'({", ".join(KEPT)}); it is not a campaign '
                         'archive (python -m scripts.campaign --archive).')
    by_folder = {}
    for member in members:
      by_folder.setdefault(os.path.dirname(member.name), []).append(member)
    written = 0
    for folder, group in sorted(by_folder.items()):
      target = os.path.join(root, folder)
      if not _newer(archive, folder, target):
        continue  # This root holds the run as far or further.
      os.makedirs(target, exist_ok=True)
      for member in group:
        with archive.extractfile(member) as source:
          files.write_atomically(os.path.join(target, os.path.basename(
              member.name)), source.read())
        written += 1
  return written


def _newer(archive: tarfile.TarFile, folder: str, target: str) -> bool:
  """Whether the archive's CSV of a folder holds more iterations."""
  mine = os.path.join(target, run_lib.RESULTS_FILE)
  if not os.path.exists(mine):
    return True
  try:
    source = archive.extractfile(f'{folder}/{run_lib.RESULTS_FILE}')
  except KeyError:
    return False
  theirs = mine + '.ingest'
  with source, open(theirs, 'wb') as f:
    f.write(source.read())
  try:
    return len(run_data.iterations(theirs)) > len(run_data.iterations(mine))
  finally:
    os.remove(theirs)
