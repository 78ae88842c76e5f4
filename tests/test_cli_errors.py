"""Every command-line tool fails cleanly on bad input: one `Error:` line.

Each tool's entry point meets the bad inputs that fit it (an empty
directory, a directory without what the tool reads, a truncated file, a path
that does not exist), and must answer with a non-zero exit and one line on
stderr that starts with `Error:`, names the problem and the fix, with no
traceback. Input a tool accepts stays accepted. The cases of a tool run in one
process (tests/cli_driver.py: the tool's import, JAX's for some, is paid
once); the first case of each tool also runs as a real `python -m` process,
whose output must be the driver's.
"""

import csv
import json
import os
import subprocess
import sys
import tarfile

import pytest

from tests.test_analysis_run_data import write_run
from zoo.storage import run_json

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RUN_CSV_COLUMNS = ('agent', 'environment_name', 'seed', 'iteration',
                   'eval_episode_return')


def run_cases(module, cases, tmp_path):
  """Return one {'returncode', 'stdout', 'stderr'} per argument list."""
  out = tmp_path / f'{module}.json'
  driver = subprocess.run(
      [sys.executable, '-m', 'tests.cli_driver', module, json.dumps(cases),
       str(out)], cwd=REPO, capture_output=True, text=True, timeout=300)
  assert driver.returncode == 0, driver.stderr[-3000:]
  results = json.loads(out.read_text())
  # The first case again as a real process: the driver must match it.
  real = subprocess.run([sys.executable, '-m', module] + cases[0], cwd=REPO,
                        capture_output=True, text=True, timeout=300)
  assert (real.returncode, real.stderr) == (
      results[0]['returncode'], results[0]['stderr'])
  return results


def assert_clean_error(result, *fragments):
  """One `Error:` line naming each fragment, a non-zero exit, no traceback."""
  text = result['stdout'] + result['stderr']
  assert 'Traceback' not in text, text[-3000:]
  assert result['returncode'] != 0, text[-3000:]
  lines = result['stderr'].strip().splitlines()
  assert len(lines) == 1 and lines[0].startswith('Error: '), text[-3000:]
  for fragment in fragments:
    assert fragment in lines[0], (fragment, lines[0])


def assert_accepted(result):
  text = result['stdout'] + result['stderr']
  assert result['returncode'] == 0, text[-3000:]
  assert 'Traceback' not in text and 'Error:' not in text, text[-3000:]


def truncate(path, keep_bytes_from_end):
  """Cut a file short, as a copy interrupted mid-row would."""
  data = path.read_bytes()
  path.write_bytes(data[:len(data) - keep_bytes_from_end])


@pytest.fixture
def inputs(tmp_path):
  """Directories of bad and good input, shared by the tools' cases."""
  paths = {name: tmp_path / name for name in (
      'empty', 'unrelated', 'truncated', 'minatar', 'mixed', 'no_suite')}
  for path in paths.values():
    path.mkdir()
  paths['missing'] = tmp_path / 'does_not_exist'
  (paths['unrelated'] / 'notes.csv').write_text('a,b\n1,2\n')
  (paths['unrelated'] / 'sub').mkdir()
  (paths['unrelated'] / 'sub' / 'prices.csv').write_text('date,price\n1,2\n')
  truncated = paths['truncated'] / 'cr_dqn' / 'pong' / 'seed_1' / 'results.csv'
  write_run(str(truncated), 'cr_dqn', 'pong', 1, [-21, -20, -19])
  truncate(truncated, 30)  # The last row loses its last fields.
  paths['truncated_csv'] = truncated
  for seed in (1, 2):
    write_run(str(paths['minatar'] / f's{seed}' / 'results.csv'), 'cr_dqn',
              'minatar-breakout', seed, [0.4, 3.0 * seed], suite='minatar')
  write_run(str(paths['mixed'] / 'run' / 'results.csv'), 'cr_dqn', 'pong', 1,
            [-21, -20], suite='atari')
  write_run(str(paths['no_suite'] / 'run' / 'results.csv'), 'cr_dqn', 'pong',
            1, [-21, -20])  # No run.json: the suite is unknown.
  (paths['mixed'] / 'notes.csv').write_text('a,b\n1,2\n')
  return paths


# What every "no run CSV" error must say: what a run CSV is, and the fix.
WHAT_A_RUN_CSV_IS = ('A run CSV is the results.csv a run writes',) + tuple(
    RUN_CSV_COLUMNS) + ('Pass the directory the runs were written to',)


@pytest.mark.parametrize('module', ['scripts.analysis.aggregate',
                                    'scripts.analysis.plot_curves'])
def test_aggregate_and_plot_curves(module, inputs, tmp_path):
  extra = ['--bootstrap_reps=100'] if module == 'scripts.analysis.aggregate' else [
      f'--output_dir={tmp_path / "plots"}', '--per_game=false']
  empty, unrelated, truncated, missing, minatar, mixed, no_suite = (
      f'--runs={inputs[k]}' for k in ('empty', 'unrelated', 'truncated',
                                      'missing', 'minatar', 'mixed',
                                      'no_suite'))
  results = run_cases(module, [
      [empty] + extra,
      [unrelated] + extra,
      [truncated] + extra,
      [missing] + extra,
      [minatar, '--reference_agents='] + extra,
      [mixed, '--reference_agents='] + extra,
      [no_suite, '--reference_agents='] + extra,
      [no_suite, '--reference_agents=', '--suite=atari'] + extra,
  ], tmp_path)
  assert_clean_error(results[0], f"'{inputs['empty']}' holds no CSV file",
                     *WHAT_A_RUN_CSV_IS)
  assert_clean_error(results[1], 'none of the 2 CSV file(s)',
                     'notes.csv: missing column(s)', 'and 1 more',
                     *WHAT_A_RUN_CSV_IS)
  assert_clean_error(results[2], f'{inputs["truncated_csv"]}, line 4',
                     'cut short or damaged', "rerun the run's command")
  assert_clean_error(results[3], 'is not a directory', 'pass the directory')
  if module == 'scripts.analysis.aggregate':  # Atari's human-normalised.
    assert_clean_error(results[4], '2 MinAtar run(s)',
                       'python -m scripts.analysis.compare',
                       'python -m scripts.campaign')
  else:
    assert_accepted(results[4])  # MinAtar runs: raw-return panels.
  assert_accepted(results[5])  # A run among other CSVs: a warning only.
  assert 'warning: skipping' in results[5]['stderr']
  assert 'notes.csv' in results[5]['stderr']
  assert_clean_error(results[6], 'no run.json recording their suite',
                     '--suite=atari or --suite=minatar')
  assert_accepted(results[7])


def test_compare_published(inputs, tmp_path):
  empty_file = tmp_path / 'empty.csv'
  empty_file.write_text('')
  results = run_cases('scripts.analysis.compare_published', [
      [f'--runs={inputs["empty"]}'],
      [f'--runs={inputs["unrelated"]}'],
      [f'--runs={inputs["truncated"]}'],
      [f'--runs={inputs["truncated_csv"]}'],
      [f'--runs={empty_file}'],
      [f'--runs={inputs["missing"]}'],
  ], tmp_path)
  assert_clean_error(results[0], 'holds no CSV file', *WHAT_A_RUN_CSV_IS)
  assert_clean_error(results[1], 'none of the 2 CSV file(s)',
                     *WHAT_A_RUN_CSV_IS)
  for result in results[2:4]:
    assert_clean_error(result, 'line 4', 'cut short or damaged')
  assert_clean_error(results[4], 'holds no run rows', *WHAT_A_RUN_CSV_IS[:6])
  assert_clean_error(results[5], 'does not exist', 'pass the directory')


def test_evaluate(inputs, tmp_path):
  run_dir = tmp_path / 'run'
  (run_dir / 'checkpoints').mkdir(parents=True)
  damaged = tmp_path / 'damaged'
  (damaged / 'iteration_000001').mkdir(parents=True)
  (damaged / 'iteration_000001' / 'meta.json').write_text('{"iterat')
  results = run_cases('scripts.analysis.evaluate', [
      [f'--checkpoint_dir={inputs["empty"]}'],
      [f'--checkpoint_dir={inputs["unrelated"]}'],
      [f'--checkpoint_dir={run_dir}'],
      [f'--checkpoint_dir={damaged}'],
      [f'--checkpoint_dir={inputs["missing"]}'],
  ], tmp_path)
  for result in (results[0], results[1], results[4]):
    assert_clean_error(result, 'No checkpoint in',
                       "Pass a run's --checkpoint_dir")
  # A run directory instead of its checkpoint directory: the fix is named.
  assert_clean_error(results[2], 'No checkpoint in',
                     f'pass --checkpoint_dir={run_dir / "checkpoints"}')
  assert_clean_error(results[3], 'meta.json is truncated or corrupted',
                     'Pass another --checkpoint_dir')


def test_campaign_status(tmp_path):
  # A run directory whose files are cut short is still reported.
  campaign = tmp_path / 'c.json'
  campaign.write_text('{"blocks": [{"agent": "cr_dqn", "games": ["pong"], '
                      '"seeds": [1, 2]}]}')
  run_dir = tmp_path / 'runs' / 'cr_dqn' / 'pong' / 'seed_1'
  write_run(str(run_dir / 'results.csv'), 'cr_dqn', 'pong', 1, [-21, -20])
  truncate(run_dir / 'results.csv', 30)
  (run_dir / 'exit.json').write_text('{"returnco')
  results = run_cases('scripts.campaign.__main__', [
      ['--status', f'--campaign={campaign}', f'--root_dir={tmp_path / "runs"}'],
      ['--status', f'--campaign={tmp_path / "missing.json"}'],
  ], tmp_path)
  assert_accepted(results[0])
  assert 'pong' in results[0]['stdout']
  assert_clean_error(results[1], 'Cannot read the campaign file')


def _minatar_run(root, label, game, seed, truncated=False):
  path = root / label / 'cr_dqn' / game / f'seed_{seed}' / 'results.csv'
  write_run(str(path), 'cr_dqn', f'minatar-{game}', seed, [0.5, 2.0])
  with open(path, newline='') as f:
    rows = list(csv.DictReader(f))
  for row in rows:  # The report reads the phases' frame rates.
    row.update(eval_frame_rate='100', train_frame_rate='100')
  with open(path, 'w', newline='') as f:
    writer = csv.DictWriter(f, fieldnames=list(rows[0]))
    writer.writeheader()
    writer.writerows(rows)
  if truncated:
    truncate(path, 30)
  return path


def test_minatar_report(inputs, tmp_path):
  study = tmp_path / 'study'
  _minatar_run(study, 'CR-DQN', 'breakout', 1, truncated=True)
  campaign = tmp_path / 'study.json'
  campaign.write_text(
      '{"suite": "minatar", "flags": ["--num_iterations=1"], "blocks": '
      '[{"agent": "cr_dqn", "preset": "CR-DQN", "games": ["breakout"], '
      '"seeds": [1], "group": "CR-DQN"}]}')
  flags = [f'--campaign={campaign}', f'--report={tmp_path / "report"}']
  results = run_cases('scripts.campaign.__main__', [
      [f'--root_dir={inputs["empty"]}'] + flags,
      [f'--root_dir={study}'] + flags,
      [f'--root_dir={inputs["unrelated"]}'] + flags,
  ], tmp_path)
  for result in (results[0], results[2]):
    assert_clean_error(result, 'none of the 1 planned runs has a results.csv',
                       'CR-DQN/cr_dqn/breakout/seed_1/results.csv',
                       'Pass the --root_dir the campaign ran in')
  assert_clean_error(results[1], 'seed_1/results.csv, line 3',
                     'cut short or damaged', "rerun the run's command")
  assert not (tmp_path / 'report').exists()


def test_compare(inputs, tmp_path):
  jitted = tmp_path / 'jitted'
  # run.json gives the run's game, breakout: the report's name for it.
  run_json.write(str(_minatar_run(jitted, 'CR-DQN', 'breakout', 1)),
                 'cr_dqn', 'minatar', {'environment_name': 'breakout'})
  damaged = tmp_path / 'damaged'
  _minatar_run(damaged, 'CR-DQN', 'breakout', 1, truncated=True)
  reference = tmp_path / 'runs.csv'
  reference.write_text('configuration,game,seed,state,final_eval_return\n'
                       'CR-DQN,breakout,1,complete,8.5\n'
                       'CR-DQN,breakout,2,complete,9.')
  truncate(reference, 3)
  good = tmp_path / 'good.csv'
  good.write_text('configuration,game,seed,state,final_eval_return'
                  '\nCR-DQN,breakout,1,complete,8.5\n')
  common = ['--bootstrap_reps=100']
  results = run_cases('scripts.analysis.compare', [
      [f'--a={inputs["empty"]}', f'--b=CR-DQN={good}'] + common,
      [f'--a={jitted}', f'--b=CR-DQN={reference}'] + common,
      [f'--a={jitted}', f'--b=CR-DQN={inputs["unrelated"] / "notes.csv"}']
      + common,
      [f'--a={jitted}', f'--b=CR-DQN={inputs["missing"]}'] + common,
      [f'--a={damaged}', f'--b=CR-DQN={good}'] + common,
      [f'--a={jitted}', f'--b=CR-DQN={good}'] + common,
      [f'--a={jitted}', f'--b=QR-DQN-1={good}'] + common,
      [f'--a={jitted}', f'--b={jitted}', '--per_iteration'],
  ], tmp_path)
  assert_clean_error(results[0], *WHAT_A_RUN_CSV_IS)
  assert_clean_error(results[1], 'line 3', 'cut short or damaged',
                     'Pass the runs.csv')
  assert_clean_error(results[2], 'missing column(s)', 'Pass the runs.csv')
  assert_clean_error(results[3], 'no such file', "study report's runs.csv")
  assert_clean_error(results[4], 'seed_1/results.csv, line 3',
                     'cut short or damaged')
  assert_accepted(results[5])
  assert f'| breakout | 1 | {jitted} | 2.00 (1) | CR-DQN | 8.50 (1) | ' \
      '-6.50 |' in results[5]['stdout']
  assert_clean_error(results[6], 'QR-DQN-1 not in', 'it holds CR-DQN')
  assert_accepted(results[7])
  assert '| 1 | 1000 | 2.00 (2.00–2.00, 1) | 2.00' in results[7]['stdout']
