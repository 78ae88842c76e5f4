"""The docs' run transcripts have the shape of what a run prints now.

docs/running.md shows a real run's log lines. A tiny real run (Asterix, one
iteration) is made here, and every absl log line of the page must have the
shape of one of its lines (same source file, same words; numbers, durations
and paths may differ), so a change to what a run prints shows up here until
the page is regenerated. The "Resumed from" line, which a fresh run does not
print, is checked against its format in zoo/loops/driver.py.
"""

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PAGES = ('docs/running.md',)
# I1126 05:15:21.702850 140617778498432 runner.py:111] message
LOG_LINE = re.compile(r'^[IWE]\d{4} [\d:.]+ +\d+ ([\w.]+):\d+\] (.*)$')


def shape(message: str) -> str:
  """Return a log message with its numbers, durations and paths abstracted."""
  message = re.sub(r'(?:/[\w.-]+)+/iteration_\d+', 'PATH', message)
  message = re.sub(r'\bnan\b', '#', message)
  message = re.sub(r'\d+(?:[.,]\d+)*', '#', message)
  # The run's ETA: a duration, unknown, or unknown while the replay fills.
  return re.sub(r'ETA (?:\?(?: \(filling the replay: no update yet\))?|'
                r'#h#m#s)', 'ETA D', message)


def log_lines(text: str):
  """Return (source file, message) of every absl log line in `text`."""
  return [m.groups() for m in map(LOG_LINE.match, text.splitlines()) if m]


def test_shape_abstracts_what_changes_from_run_to_run():
  assert shape('iteration 1/2, frame 2000: eval return 50.00 (0 episodes), '
               'train return nan, run ETA ?') == shape(
                   'iteration 2/2, frame 4,000: eval return 100.00 (3 '
                   'episodes), train return 150.00, run ETA 0h00m31s')
  assert shape('Resumed from /tmp/a/checkpoints/iteration_000002 at '
               'iteration 3.') == 'Resumed from PATH at iteration #.'
  assert shape('eval return 1.00') != shape('train return 1.00')


def test_the_transcripts_match_a_real_run(tmp_path):
  result = subprocess.run(
      [sys.executable, '-m', 'cr_dqn.run_atari', '--environment_name=asterix',
       '--num_iterations=1', '--num_train_frames=600', '--num_eval_frames=200',
       '--replay_capacity=1000', '--min_replay_capacity_fraction=0.1',
       '--progress_interval_seconds=0.5', '--tensorboard_loss_period=100',
       f'--results_csv_path={tmp_path / "run" / "results.csv"}'],
      cwd=REPO, capture_output=True, text=True, timeout=600)
  assert result.returncode == 0, result.stderr[-3000:]
  printed = {(source, shape(message))
             for source, message in log_lines(result.stderr)}
  assert {source for source, _ in printed} >= {'python_loop.py', 'progress.py'}
  with open(os.path.join(REPO, 'zoo', 'loops', 'driver.py')) as f:
    resumed = re.search(r"'(Resumed from %s at iteration %d\.)'", f.read())
  assert resumed, 'zoo/loops/driver.py no longer logs "Resumed from ..."'
  printed.add(('driver.py', shape(resumed.group(1).replace(
      '%s', '/x/iteration_1').replace('%d', '1'))))
  checked = 0
  for page in PAGES:
    with open(os.path.join(REPO, page), encoding='utf-8') as f:
      for source, message in log_lines(f.read()):
        assert (source, shape(message)) in printed, (
            f'{page}: this log line no longer has the shape of what a run '
            f'prints; regenerate the transcript:\n{source}] {message}\n'
            'A real run printed:\n' + '\n'.join(
                sorted(f'{s}] {m}' for s, m in printed)))
        checked += 1
  assert checked >= 10  # The pages still hold transcripts.
