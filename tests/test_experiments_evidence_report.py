"""Tests for experiments.evidence_report: the page follows the folder."""

import os

from experiments import evidence_plan
from experiments import evidence_report
from experiments import evidence_store

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def test_docs_page_is_in_step_with_the_results_folder():
  """Regenerate with: python -m experiments.evidence --report"""
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
  not_yet = text[text.index('Not measured on a GPU yet'):]
  assert '`bench_agent`' not in not_yet.split('## The plan')[0]
  assert '`bench_losses`' in not_yet
