"""Each run's state, and the table of a campaign."""

import json

from scripts.campaign import run_record as run_lib
from scripts.campaign import status


def test_states_and_table(tmp_path):
  root = str(tmp_path)
  runs = [run_lib.Run('cr_dqn', 'atari', 'pong', (s,), ('--num_iterations=1',))
          for s in (1, 2, 3, 4)]
  def write(run, iterations=None, returncode=None):
    folder = tmp_path / 'cr_dqn' / 'pong' / f'seed_{run.seeds[0]}'
    folder.mkdir(parents=True)
    if iterations is not None:
      (folder / 'results.csv').write_text(
          'iteration\n' + ''.join(f'{i}\n' for i in iterations))
    if returncode is not None:
      (folder / 'exit.json').write_text(json.dumps({'returncode': returncode}))
  write(runs[0], [0, 1], 0)
  write(runs[1], [0], 143)
  write(runs[2], [0], 1)
  states = [status.of(r, root) for r in runs]
  assert [s.state for s in states] == [status.DONE, status.CUT, status.FAILED,
                                       status.PENDING]
  assert 'resumes next time' in states[1].detail
  text = status.table(states)
  assert 'cr_dqn/pong/seed_1  done' in text
  assert text.splitlines()[-1] == (
      '1 done, 0 running, 1 cut, 1 failed, 1 pending (4 runs)')
  assert status.to_launch(runs, root) == runs[1:]
  assert status.to_launch(runs, root, retry_failed=False) == [runs[1],
                                                               runs[3]]
