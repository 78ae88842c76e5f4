"""Processes under a hard deadline: start them, watch them, stop them in time.

The clock and the process starter are parameters, so the deadline logic runs
in tests with a fake clock and fake processes.
"""

import dataclasses
import os
import signal
import subprocess
import time
from typing import Callable, Dict, List, Optional, Protocol, Sequence

STOP_GRACE_S = 5.0   # SIGTERM, then SIGKILL after this long.


class Clock(Protocol):
  def now(self) -> float: ...
  def sleep(self, seconds: float) -> None: ...


class RealClock:
  def now(self) -> float:
    return time.monotonic()

  def sleep(self, seconds: float) -> None:
    time.sleep(seconds)


class Deadline:
  """A point in time on a clock: seconds left until it, never negative."""

  def __init__(self, clock: Clock, seconds: float):
    self.clock = clock
    self.end = clock.now() + seconds

  def left(self) -> float:
    return max(0.0, self.end - self.clock.now())

  def fits(self, seconds: float) -> bool:
    return seconds <= self.left()


@dataclasses.dataclass(frozen=True)
class Task:
  name: str
  argv: Sequence[str]            # The full command.
  log_path: str                  # Its stdout and stderr.
  cwd: Optional[str] = None
  env: Optional[Dict[str, str]] = None


@dataclasses.dataclass
class Outcome:
  name: str
  status: str                    # 'ok', 'failed' or 'killed'.
  returncode: Optional[int]
  seconds: float


class Handle(Protocol):
  def poll(self) -> Optional[int]: ...
  def stop(self) -> None: ...


class GroupProcess:
  """A subprocess in its own process group, stopped with all its children."""

  def __init__(self, task: Task):
    os.makedirs(os.path.dirname(os.path.abspath(task.log_path)),
                exist_ok=True)
    self._log = open(task.log_path, 'w')
    self._popen = subprocess.Popen(
        list(task.argv), stdout=self._log, stderr=subprocess.STDOUT,
        stdin=subprocess.DEVNULL, cwd=task.cwd, env=task.env,
        start_new_session=True)

  def poll(self) -> Optional[int]:
    rc = self._popen.poll()
    if rc is not None:
      self._log.close()
    return rc

  def stop(self) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
      try:
        os.killpg(self._popen.pid, sig)
      except ProcessLookupError:
        break
      try:
        self._popen.wait(STOP_GRACE_S)
        break
      except subprocess.TimeoutExpired:
        continue
    self._popen.poll()
    self._log.close()


def run_together(tasks: Sequence[Task], deadline: Deadline,
                 start: Callable[[Task], Handle] = GroupProcess,
                 poll_s: float = 1.0) -> List[Outcome]:
  """Run the tasks at once until all end or the deadline passes.

  At the deadline, or on any exception (Ctrl-C, SIGTERM turned into
  KeyboardInterrupt), the tasks still running are stopped; an exception is
  raised again once they are.
  """
  clock = deadline.clock
  started = clock.now()
  running = {task.name: (task, start(task)) for task in tasks}
  outcomes: Dict[str, Outcome] = {}

  def stop_all():
    for name, (_, handle) in list(running.items()):
      handle.stop()
      outcomes[name] = Outcome(name, 'killed', None, clock.now() - started)
      del running[name]

  try:
    while running:
      for name, (_, handle) in list(running.items()):
        rc = handle.poll()
        if rc is not None:
          outcomes[name] = Outcome(name, 'ok' if rc == 0 else 'failed', rc,
                                   clock.now() - started)
          del running[name]
      if running and deadline.left() <= 0:
        stop_all()
      elif running:
        clock.sleep(min(poll_s, max(deadline.left(), 0.01)))
  except BaseException:
    stop_all()
    raise
  return [outcomes[task.name] for task in tasks]
