"""A deadline stops runs at a safe point; the next invocation resumes them."""

import csv
import subprocess
import sys
import time

import pytest

from scripts.campaign import budget
from scripts.campaign import campaigns
from scripts.campaign import launch
from scripts.campaign import status
from zoo.storage import results_csv

# Tiny MinAtar runs: seconds each. An iteration lasts long enough (a second
# of CPU) for the deadline to cut the run before its end.
TINY = {'suite': 'minatar', 'flags': [
    '--num_iterations=3', '--num_train_frames=1000', '--num_eval_frames=200',
    '--replay_capacity=1000', '--min_replay_capacity_fraction=0.1',
    '--batch_size=4', '--target_network_update_period=200',
    '--num_quantiles=11', '--hidden_size=16', '--tensorboard_dir='],
        'blocks': [{'agent': 'cr_dqn', 'games': ['breakout'], 'seeds': [1]}]}


class CutAfterFirstIteration(budget.Deadline):
  """A deadline that passes once the run has written iteration 1."""

  def __init__(self, csv_path):
    super().__init__(None)
    self.csv_path = csv_path

  def left(self):
    try:
      return 0.0 if 1 in results_csv.iterations(self.csv_path) else 1.0
    except (OSError, ValueError, KeyError):
      return 1.0


def deterministic_rows(path):
  with open(path, newline='') as f:
    return [{k: row[k] for k in results_csv.DETERMINISTIC_COLUMNS}
            for row in csv.DictReader(f)]


def test_a_cut_campaign_resumes_from_its_checkpoints_to_the_same_csv(
    tmp_path):
  run, = campaigns.expand(TINY)
  uncut, cut = str(tmp_path / 'uncut'), str(tmp_path / 'cut')
  deadline = CutAfterFirstIteration(run.csv_paths(cut)[0])
  both = [launch.threading.Thread(target=launch.run_local,
                                  args=([run], uncut, 1)),
          launch.threading.Thread(target=launch.run_local, args=(
              [run], cut, 1, (), deadline), kwargs={'poll_s': 0.05})]
  for thread in both:
    thread.start()
  for thread in both:
    thread.join()
  log = open(f'{run.home(cut)}/run.log').read()
  first = status.of(run, cut)
  assert first.state == status.CUT, log
  assert 2 <= first.iterations < 4, log
  assert 'Interrupted (SIGTERM)' in log
  assert launch.run_local(status.to_launch([run], cut), cut, 1) == {
      run.name: 0}
  log = open(f'{run.home(cut)}/run.log').read()
  assert 'Resumed from' in log
  assert status.of(run, cut).state == status.DONE
  assert run.done(uncut)
  assert deterministic_rows(run.csv_paths(cut)[0]) == deterministic_rows(
      run.csv_paths(uncut)[0])


def test_deadline_counts_down_on_its_clock():
  now = [100.0]
  deadline = budget.Deadline(2, clock=lambda: now[0])
  assert deadline.left() == 120 and not deadline.passed()
  now[0] = 220.0
  assert deadline.passed() and deadline.left() == 0
  assert not budget.Deadline(None).passed()
  with pytest.raises(ValueError, match='budget_minutes'):
    budget.Deadline(0)


def test_stop_kills_a_run_that_ignores_sigterm(tmp_path):
  script = tmp_path / 'stubborn.py'
  script.write_text('import signal, time\n'
                    'signal.signal(signal.SIGTERM, signal.SIG_IGN)\n'
                    'print("ready", flush=True)\ntime.sleep(60)\n')
  child = subprocess.Popen([sys.executable, str(script)],
                           stdout=subprocess.PIPE, start_new_session=True)
  child.stdout.readline()
  started = time.time()
  assert budget.stop(child, grace_s=0.5) == -9
  assert time.time() - started < 10
