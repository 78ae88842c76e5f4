"""Fail a checkpoint save just before one of its files is written.

A fault is 'ACTION:ITERATION:FILE': the save of ITERATION fails just before
FILE (tree.npz, meta.json or a replay array such as frames.npy) is written;
ACTION `kill` sends the process SIGKILL, `enospc` raises OSError(ENOSPC) as a
full disk would. In-process: `install(fault, monkeypatch.setattr)`; in an
entry point's process:

  python -m tests.checkpoint_faults FAULT MODULE [FLAGS...]
"""

import errno
import os
import runpy
import signal
import sys

from zoo.storage import checkpoint


def install(fault: str, set_attribute=setattr) -> None:
  """Make checkpoint saves fail as `fault` says."""
  action, at_iteration, at_file = fault.split(':')
  if action not in ('kill', 'enospc'):
    raise ValueError(f'Unknown fault action {action!r}.')
  save, write_file = checkpoint.save, checkpoint._write_file  # pylint: disable=protected-access
  saving = []

  def faulty_save(directory, iteration, *args, **kwargs):
    saving[:] = [iteration]
    return save(directory, iteration, *args, **kwargs)

  def faulty_write_file(path, write):
    if saving == [int(at_iteration)] and os.path.basename(path) == at_file:
      if action == 'kill':
        os.kill(os.getpid(), signal.SIGKILL)
      raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC) + ' (injected)',
                    at_file)
    return write_file(path, write)

  set_attribute(checkpoint, 'save', faulty_save)
  set_attribute(checkpoint, '_write_file', faulty_write_file)


if __name__ == '__main__':
  install(sys.argv[1])
  sys.argv = sys.argv[2:]
  runpy.run_module(sys.argv[0], run_name='__main__', alter_sys=True)
