"""Tests for scripts.experiments.evidence_report: the pages follow the folder."""

import json
import os

import pytest

from scripts.experiments import evidence_plan
from scripts.experiments import evidence_report
from scripts.experiments import evidence_store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_docs_page_is_in_step_with_the_results_folder():
  """Regenerate with: python -m scripts.experiments.evidence --report"""
  expected = evidence_report.render(os.path.join(ROOT, 'evidence'),
                                    evidence_plan.registry_plan())
  with open(os.path.join(ROOT, 'docs', 'evidence.md')) as f:
    assert f.read() == expected


def test_an_empty_folder_lists_everything_as_not_yet(tmp_path):
  text = evidence_report.render(str(tmp_path), evidence_plan.pieces())
  assert 'None yet' in text and 'No benchmark measured yet' in text
  assert text.count('| not yet |') == len(evidence_plan.pieces())
  assert '`bench_jitted_minatar`' in text and '`bench_agent`' in text


def test_a_session_shows_its_machine_tables_and_done_pieces(tmp_path):
  d = tmp_path / 'sessions' / 's1'
  rel = 'runs/minatar-cr-vs-qr1-asterix/CR-DQN/cr_dqn/asterix/seed_{}/results.csv'
  csvs = []
  for seed, final in ((1, 20.0), (2, 30.0)):
    path = d / rel.format(seed)
    os.makedirs(path.parent)
    path.write_text(f'iteration,eval_episode_return\n0,1.0\n5,{final}\n')
    csvs.append(rel.format(seed))
  (d / 'benchmarks.md').write_text(
      '# Benchmarks, H100\n\n## agent\n\n| mode | frames/s |\n|---|---|\n'
      '| reference K=1 | 1686 |\n')
  evidence_store.write_session(str(d), {
      'id': 's1', 'date_utc': '2026-11-27', 'scale': 'full',
      'code_version': 'abc', 'status': 'done', 'command': 'python -m x',
      'machine': {'device_kind': 'NVIDIA H100', 'platform': 'gpu',
                  'cpu_count': 16, 'jax': '0.11.2'},
      'benchmarks': [{'name': 'agent', 'status': 'ok'}],
      'pieces': [{'id': 'minatar-cr-vs-qr1-asterix', 'status': 'complete',
                  'runs': [{'label': 'CR-DQN', 'csvs': csvs,
                            'iterations_done': 5}]}]})
  text = evidence_report.render(str(tmp_path), evidence_plan.pieces())
  assert '| s1 | 2026-11-27 | NVIDIA H100 (gpu), 16 CPUs | 0.11.2 |' in text
  assert '### s1' in text and '#### agent' in text
  assert '| reference K=1 | 1686 |' in text
  assert '1 of 14 pieces done' in text
  assert '| s1 | CR-DQN 25.00 (2, 5) |' in text
  not_yet = text[text.index('Not yet measured on a GPU by the evidence'):]
  assert '`bench_agent`' not in not_yet.split('## The plan')[0]
  assert '`bench_losses`' in not_yet


def test_readme_and_result_pages_are_in_step_with_the_results_folder():
  """Regenerate with: python -m scripts.experiments.evidence --report"""
  pages = evidence_report.render_pages(ROOT, os.path.join(ROOT, 'evidence'),
                                       evidence_plan.registry_plan())
  assert sorted(pages) == sorted(evidence_report.PAGE_SECTIONS)
  for page, expected in pages.items():
    with open(os.path.join(ROOT, page)) as f:
      assert f.read() == expected, f'{page} is not the generated text'


def _recorded(root, sid, platform, figures, date='2026-11-26'):
  d = os.path.join(root, 'sessions', sid)
  evidence_store.write_session(d, {
      'id': sid, 'date_utc': date, 'scale': 'recorded', 'status': 'by hand',
      'machine': {'platform': platform, 'description': f'the {sid} machine'},
      'benchmarks': [], 'pieces': []})
  evidence_store.write_figures(d, [
      dict(zip(('key', 'value', 'unit', 'what'), f)) for f in figures])
  return d


def _run_csv(session_dir, rel, rows):
  path = os.path.join(session_dir, 'runs', rel, 'results.csv')
  os.makedirs(os.path.dirname(path))
  with open(path, 'w') as f:
    f.write('environment_name,iteration,frame,eval_episode_return\n')
    f.writelines(f'{g},{i},{fr},{r}\n' for g, i, fr, r in rows)


def test_the_performance_table_shows_each_figure_with_machine_and_day(tmp_path):
  _recorded(str(tmp_path), 'a-cpu', 'cpu', [
      ('atari.bench_agent.reference:1', '389', 'frames/s', 'x'),
      ('atari.bench_agent.reference:1', '351', 'frames/s', 'x'),
      ('losses.n201.cramer_sorted', '0.503', 'ms', 'x'),
      ('losses.n201.rlax_qr', '0.858', 'ms', 'x')])
  _recorded(str(tmp_path), 'b-gpu', 'gpu', [
      ('atari.bench_agent.reference:1', '1,686', 'frames/s', 'x'),
      ('losses.n201.cramer_sorted', '0.133', 'ms', 'x')], date='2026-11-27')
  table = evidence_report.sections(str(tmp_path), [])['performance-table']
  rows = table.splitlines()
  assert rows[2].endswith('| 351–389 frames/s | the a-cpu machine | '
                          '2026-11-26 |')
  assert rows[3] == '|  | 1,686 frames/s | the b-gpu machine | 2026-11-27 |'
  # Both keys of a row are needed: the GPU session lacks rlax's figure.
  assert '| 0.503 ms / 0.858 ms | the a-cpu machine |' in table
  assert '0.133' not in table and len(rows) == 5


def test_what_is_not_measured_follows_the_gpu_figures_and_runs(tmp_path):
  root = str(tmp_path)
  _recorded(root, 'a-cpu', 'cpu', [
      ('atari.bench_agent.vector:16:u4', '333', 'frames/s', 'x')])
  plan = evidence_plan.pieces()
  text = evidence_report.sections(root, plan)['not-measured']
  assert '`--num_fused_updates`' in text and 'longer than 2M' in text
  assert f'{len(plan)} of the evidence plan' in text
  d = _recorded(root, 'b-gpu', 'gpu', [
      ('atari.bench_agent.vector:64:u8', '9000', 'frames/s', 'x')])
  _run_csv(d, 'atari-breakout/CR-DQN/cr_dqn/breakout/seed_1',
           [('breakout', i, i * 1e6, i) for i in range(4)])
  text = evidence_report.sections(root, plan)['not-measured']
  assert '`--num_fused_updates`' not in text
  assert '`--replay_on_device`' in text and 'longer than 2M' not in text


def test_result_pages_show_the_runs_of_result_sessions_only(tmp_path):
  root = str(tmp_path)
  d = _recorded(root, 'a-gpu', 'gpu', [
      ('atari.run_atari.vector:64', '8,805', 'frames/s', 'a Pong run')])
  for label, finals in (('CR-DQN', (20, 30, 40)), ('QR-DQN-1', (10, 10, 13))):
    for seed, final in enumerate(finals, 1):
      _run_csv(d, f'minatar-asterix/{label}/cr_dqn/minatar-asterix/'
               f'seed_{seed}', [('minatar-asterix', 0, 0, 0.5),
                                ('minatar-asterix', 5, 5e5, final)])
  _run_csv(d, 'atari-breakout/CR-DQN/cr_dqn/breakout/seed_1',
           [('breakout', 0, 0, 1.0), ('breakout', 3, 3e6, 15.5)])
  os.makedirs(os.path.join(d, 'judge'))
  with open(os.path.join(d, 'judge', 'atari-breakout.txt'), 'w') as f:
    f.write('  4 iterations, 2 compared: 2 in range, 0 below, 0 above. '
            'A new seed ...\n')
  with open(os.path.join(d, 'session.json')) as f:
    record = json.load(f)
  record['pieces'] = [{'id': 'atari-breakout', 'judge':
                       'judge/atari-breakout.txt'}]
  evidence_store.write_session(d, record)
  rehearsal = os.path.join(root, 'sessions', 'b-rehearsal')
  evidence_store.write_session(rehearsal, {'id': 'b-rehearsal',
                                           'scale': 'rehearsal'})
  _run_csv(rehearsal, 'atari-pong/CR-DQN/cr_dqn/pong/seed_1',
           [('pong', 0, 0, -21.0)])
  bodies = evidence_report.sections(root, [])
  assert ('| asterix | CR-DQN | 3 | 5 | 30.00 [' in bodies['minatar-results'])
  assert ('| Asterix | 30.00 [' in bodies['minatar-table'] and
          '| – | 3 | the a-gpu machine, 2026-11-26 |' in
          bodies['minatar-table'])
  atari = bodies['atari-runs']
  assert ('| breakout | CR-DQN | 1 | 3 | 3,000,000 | 15.50 | 4 iterations, '
          '2 compared: 2 in range, 0 below, 0 above (`a-gpu/judge/'
          'atari-breakout.txt`) |') in atari
  assert 'pong' not in atari and 'a Pong run: 8,805 frames/s' in atari


def test_a_section_needs_its_markers_once():
  text = 'a\n<!-- --8<-- [start:x] -->\nold\n<!-- --8<-- [end:x] -->\nb\n'
  assert evidence_report.replace_section(text, 'x', 'new\n') == (
      'a\n<!-- --8<-- [start:x] -->\nnew\n<!-- --8<-- [end:x] -->\nb\n')
  with pytest.raises(ValueError, match='markers'):
    evidence_report.replace_section(text, 'y', 'new')


def test_recorded_commands_of_modules_gone_are_mapped_to_todays(tmp_path):
  d = tmp_path / 'sessions' / 'old'
  evidence_store.write_session(str(d), {
      'id': 'old', 'scale': 'recorded', 'command':
          'python -m experiments.minatar_study --games=asterix',
      'machine': {'device_kind': 'cpu', 'platform': 'cpu'}})
  evidence_store.write_figures(str(d), [
      {'key': 'a', 'command': 'python -m benchmarks.bench_agent'},
      {'key': 'b', 'command': 'python -m benchmarks.bench_nothing'},
      {'key': 'c', 'command': 'python -m scripts.benchmarks.bench_agent'}])
  sessions = evidence_store.load_sessions(str(tmp_path))
  count, names = evidence_report.renamed_modules(sessions)
  assert count == 3
  assert names == [('benchmarks.bench_agent', 'scripts.benchmarks.bench_agent'),
                   ('benchmarks.bench_nothing', '(gone)'),
                   ('experiments.minatar_study',
                    'scripts.experiments.minatar_study')]
  text = evidence_report.render(str(tmp_path), evidence_plan.pieces())
  assert ('3 recorded commands name modules that no longer exist' in text and
          '`benchmarks.bench_agent` is `scripts.benchmarks.bench_agent`' in text)
