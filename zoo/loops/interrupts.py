"""Clean stops on SIGINT (Ctrl-C) and SIGTERM: record the signal, stop later.

Python's default SIGINT handler raises KeyboardInterrupt wherever the main
thread is, JAX tracing and XLA compilation included, which crashed the process
or printed long tracebacks. `install()` only records the signal; `pending()`,
called at safe points, raises `Interrupted` there. A second signal exits at
once (checkpoints are atomic: nothing is lost that a rerun would not redo).
Standard library only: the entry points install the handlers before JAX loads.
"""

import os
import signal
from typing import Optional

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: Optional[int] = None


class Interrupted(Exception):
  """A recorded SIGINT or SIGTERM, raised at a safe point.

  Attributes:
    signum: the signal.
    exit_status: 128 + signum (130 for SIGINT, 143 for SIGTERM), the status
      a shell reports for a process its signal ended.
    message: where the run stood and how to resume (set by whoever knows).
  """

  def __init__(self, signum: int, message: str = ''):
    super().__init__(message or signal_name(signum))
    self.signum = signum
    self.exit_status = 128 + signum
    self.message = message


def _record(signum, frame) -> None:
  del frame
  global _pending
  if _pending is not None:
    os.write(2, b'\nSecond interrupt: exiting now. Rerun the same command to '
                b'resume from the last checkpoint.\n')
    os._exit(128 + signum)  # pylint: disable=protected-access
  _pending = signum


def install() -> None:
  """Record SIGINT and SIGTERM instead of acting on them (see module doc)."""
  for signum in _SIGNALS:
    signal.signal(signum, _record)


def pending() -> Optional[int]:
  """Return the recorded signal, or None."""
  return _pending


def signal_name(signum: int) -> str:
  return signal.Signals(signum).name
