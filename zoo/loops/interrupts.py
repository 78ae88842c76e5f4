"""Clean stops on SIGINT (Ctrl-C) and SIGTERM: record the signal, stop later.

Python's default SIGINT handler raises anywhere, JAX compilation included.
`install()` records the signals instead; `pending()`, called at safe points,
raises `Interrupted` there; a second signal exits at once. Standard library
only: the entry points install the handlers before JAX loads.
"""

import os
import signal
from typing import Optional

_SIGNALS = (signal.SIGINT, signal.SIGTERM)
_pending: Optional[int] = None


class Interrupted(Exception):
  """A recorded SIGINT or SIGTERM, raised at a safe point.

  `exit_status` is 128 + signum; `message` says where the run stood.
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
