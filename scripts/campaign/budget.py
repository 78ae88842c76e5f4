"""A campaign's time limit: stop its runs at a safe point, keep checkpoints.

At the deadline each run gets SIGTERM, which it handles at its next safe
point (zoo.loops.interrupts): it writes nothing half-done, keeps its
checkpoint and exits 143. The next invocation of the same campaign resumes
it from that checkpoint, as it resumes any run that is not done.
"""

import math
import os
import signal
import subprocess
import time
from typing import Callable, Optional

# Exit statuses of a run stopped at a safe point (SIGINT, SIGTERM).
CUT = (128 + signal.SIGINT, 128 + signal.SIGTERM)
# A stopped run's longest wait for its next safe point before SIGKILL.
STOP_GRACE_S = 120.0


class Deadline:
  """A wall-clock deadline (time.time: the same on every node), or none."""

  def __init__(self, minutes: Optional[float],
               clock: Callable[[], float] = time.time):
    if minutes is not None and minutes <= 0:
      raise ValueError(f'--budget_minutes must be > 0, got {minutes}.')
    self._clock = clock
    self.end = math.inf if minutes is None else clock() + 60 * minutes

  def left(self) -> float:
    return max(0.0, self.end - self._clock())

  def passed(self) -> bool:
    return self.left() <= 0


def stop(process: subprocess.Popen, grace_s: float = STOP_GRACE_S) -> int:
  """Stop a run started in its own session; return its exit status.

  SIGTERM first, to its whole process group, then SIGKILL if it has not
  reached a safe point within grace_s.
  """
  for sig, wait_s in ((signal.SIGTERM, grace_s), (signal.SIGKILL, None)):
    try:
      os.killpg(process.pid, sig)
    except ProcessLookupError:
      break
    try:
      return process.wait(wait_s)
    except subprocess.TimeoutExpired:
      continue
  return process.wait()
