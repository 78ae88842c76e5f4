"""Tests for zoo.loops.interrupts: signals are recorded, not raised where they land.

The entry points' behaviour end to end (exit status, message, resume) is
tested with real processes in tests/test_zoo_runner.py.
"""

import contextlib
import os
import signal
import subprocess
import sys

import pytest

from zoo.loops import interrupts


@contextlib.contextmanager
def installed_handlers():
  """interrupts.install() for the block; then the handlers of before."""
  saved = {signum: signal.getsignal(signum)
           for signum in (signal.SIGINT, signal.SIGTERM)}
  interrupts.install()
  try:
    yield
  finally:
    for signum, handler in saved.items():
      signal.signal(signum, handler)
    interrupts._pending = None  # pylint: disable=protected-access


@pytest.fixture
def installed():
  with installed_handlers():
    yield


@pytest.mark.parametrize('signum,status', [(signal.SIGINT, 130),
                                           (signal.SIGTERM, 143)])
def test_a_signal_is_recorded_and_execution_goes_on(installed, signum, status):
  assert interrupts.pending() is None
  os.kill(os.getpid(), signum)
  total = sum(range(1000))  # No KeyboardInterrupt (nor exit) here.
  assert total == 499500
  assert interrupts.pending() == signum
  error = interrupts.Interrupted(signum, 'where and how to resume')
  assert error.exit_status == status
  assert error.message == 'where and how to resume'
  assert interrupts.signal_name(signum) in ('SIGINT', 'SIGTERM')


def test_a_second_signal_exits_at_once():
  code = ('import os, signal, time\n'
          'from zoo.loops import interrupts\n'
          'interrupts.install()\n'
          'os.kill(os.getpid(), signal.SIGTERM)\n'
          'time.sleep(0.1)\n'
          'os.kill(os.getpid(), signal.SIGINT)\n'
          'time.sleep(5)\n'
          'print("not reached")\n')
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  result = subprocess.run([sys.executable, '-c', code], capture_output=True,
                          text=True, cwd=root, timeout=60,
                          env=dict(os.environ, PYTHONPATH=root))
  assert result.returncode == 130 and result.stdout == ''
  assert result.stderr.strip() == ('Second interrupt: exiting now. Rerun the '
                                   'same command to resume from the last '
                                   'checkpoint.')
