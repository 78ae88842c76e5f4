"""Tests for scripts.experiments.evidence_schedule: the deadline, on a fake clock."""

import sys

import pytest

from scripts.experiments import evidence_schedule as schedule


class FakeClock:
  """A clock whose sleep only moves its time on."""

  def __init__(self, t=0.0):
    self.t = t

  def now(self):
    return self.t

  def sleep(self, seconds):
    self.t += seconds


class FakeProcess:
  def __init__(self, clock, seconds, rc=0):
    self.clock, self.end, self.rc = clock, clock.t + seconds, rc
    self.stopped = False

  def poll(self):
    return self.rc if self.clock.t >= self.end else None

  def stop(self):
    self.stopped = True


def _starter(clock, durations, started):
  def start(task):
    seconds, rc = durations[task.name]
    started[task.name] = FakeProcess(clock, seconds, rc)
    return started[task.name]
  return start


def test_tasks_run_together_until_they_end():
  clock, started = FakeClock(), {}
  deadline = schedule.Deadline(clock, 100)
  tasks = [schedule.Task('a', [], '/dev/null'), schedule.Task('b', [], '/x')]
  out = schedule.run_together(tasks, deadline, _starter(
      clock, {'a': (10, 0), 'b': (20, 3)}, started))
  assert [(o.name, o.status, o.returncode) for o in out] == [
      ('a', 'ok', 0), ('b', 'failed', 3)]
  assert out[0].seconds == pytest.approx(10, abs=1)
  assert clock.t == pytest.approx(20, abs=1)
  assert deadline.left() == pytest.approx(80, abs=1)
  assert not deadline.fits(81) and deadline.fits(79)


def test_the_deadline_stops_what_still_runs():
  clock, started = FakeClock(), {}
  deadline = schedule.Deadline(clock, 30)
  tasks = [schedule.Task('short', [], ''), schedule.Task('long', [], '')]
  out = schedule.run_together(tasks, deadline, _starter(
      clock, {'short': (5, 0), 'long': (500, 0)}, started))
  assert [o.status for o in out] == ['ok', 'killed']
  assert started['long'].stopped and not started['short'].stopped
  assert clock.t == pytest.approx(30, abs=1)


def test_an_interrupt_stops_every_task_then_propagates():
  clock, started = FakeClock(), {}

  def sleep(seconds):
    raise KeyboardInterrupt
  clock.sleep = sleep
  with pytest.raises(KeyboardInterrupt):
    schedule.run_together([schedule.Task('a', [], '')],
                          schedule.Deadline(clock, 30),
                          _starter(clock, {'a': (10, 0)}, started))
  assert started['a'].stopped


def test_group_process_runs_and_stops_a_real_command(tmp_path):
  log = str(tmp_path / 'log.txt')
  clock = schedule.RealClock()
  out = schedule.run_together(
      [schedule.Task('echo', [sys.executable, '-c', 'print("hi")'], log)],
      schedule.Deadline(clock, 30), poll_s=0.05)
  assert out[0].status == 'ok'
  assert open(log).read() == 'hi\n'
  out = schedule.run_together(
      [schedule.Task('sleep', [sys.executable, '-c',
                               'import time; time.sleep(60)'], log)],
      schedule.Deadline(clock, 0.5), poll_s=0.05)
  assert out[0].status == 'killed' and out[0].seconds < 10
