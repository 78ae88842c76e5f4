"""Tests for scripts.experiments.evidence_store: sessions, progress, pack, ingest."""

import io
import json
import os
import tarfile

import pytest

from scripts.experiments import evidence_store as store


def _session(root, sid, scale='full', status='complete', csv=True,
             device='NVIDIA H100', version='abc', benchmarks=('ok',)):
  d = os.path.join(root, 'sessions', sid)
  rel = 'runs/p1/CR-DQN/cr_dqn/breakout/seed_1/results.csv'
  if csv:
    os.makedirs(os.path.dirname(os.path.join(d, rel)))
    with open(os.path.join(d, rel), 'w') as f:
      f.write('iteration,eval_episode_return\n0,1.0\n')
  record = {'id': sid, 'scale': scale, 'code_version': version,
            'machine': {'device_kind': device},
            'benchmarks': [{'name': 'agent', 'status': s} for s in benchmarks],
            'pieces': [{'id': 'p1', 'status': status,
                        'runs': [{'csvs': [rel]}]}]}
  store.write_session(d, record)
  return d


def test_code_version_follows_the_measured_code_only(tmp_path):
  for package in ('zoo', 'analysis'):
    os.makedirs(tmp_path / package)
    (tmp_path / package / 'a.py').write_text('x = 1\n')
  first = store.code_version(str(tmp_path), ('zoo',))
  (tmp_path / 'analysis' / 'a.py').write_text('x = 2\n')
  assert store.code_version(str(tmp_path), ('zoo',)) == first
  (tmp_path / 'zoo' / 'a.py').write_text('x = 2\n')
  assert store.code_version(str(tmp_path), ('zoo',)) != first


def test_what_the_folder_holds_is_done(tmp_path):
  root = str(tmp_path)
  _session(root, 's1', scale='rehearsal')
  _session(root, 's2', status='incomplete')
  assert store.done_pieces(store.load_sessions(root)) == {}
  _session(root, 's3')
  _session(root, 's4')
  assert store.done_pieces(store.load_sessions(root)) == {'p1': 's3'}


def test_a_piece_without_its_csvs_is_not_done(tmp_path):
  _session(str(tmp_path), 's1', csv=False)
  assert store.done_pieces(store.load_sessions(str(tmp_path))) == {}


def test_last_measured_per_device_kind_benchmark_and_code(tmp_path):
  root = str(tmp_path)
  _session(root, 's1', benchmarks=('failed',))
  sessions = store.load_sessions(root)
  assert store.last_measured(sessions, 'NVIDIA H100', 'agent') is None
  _session(root, 's2')
  _session(root, 's3')
  sessions = store.load_sessions(root)
  # s2's and s3's entries carry no code: measured, but by no known code.
  assert store.last_measured(sessions, 'NVIDIA H100', 'agent') == 's3'
  assert store.last_measured(sessions, 'NVIDIA H100', 'agent', 'abc') is None
  assert store.last_measured(sessions, 'NVIDIA H200', 'agent') is None
  assert store.last_measured(sessions, 'NVIDIA H100', 'losses') is None
  sessions[1]['benchmarks'][0]['code'] = 'abc'
  assert store.last_measured(sessions, 'NVIDIA H100', 'agent', 'abc') == 's2'


def _tree(root, files):
  for rel, text in files.items():
    path = root / rel
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_source_hash_follows_the_imports_of_the_benchmark_only(tmp_path):
  _tree(tmp_path, {
      'pkg/__init__.py': '',
      'pkg/bench.py': 'import numpy\nfrom pkg import used\n'
                      'def f():\n  from .sub import deep\n',
      'pkg/used.py': 'X = 1\n',
      'pkg/sub/__init__.py': '',
      'pkg/sub/deep.py': 'from ..used import X\n',
      'pkg/other.py': 'Y = 1\n'})
  root = str(tmp_path)
  assert store.source_files(root, ['pkg.bench']) == [
      'pkg/__init__.py', 'pkg/bench.py', 'pkg/sub/__init__.py',
      'pkg/sub/deep.py', 'pkg/used.py']
  first = store.source_hash(root, ['pkg.bench'], ['--sizes=201'])
  (tmp_path / 'pkg' / 'other.py').write_text('Y = 2\n')
  assert store.source_hash(root, ['pkg.bench'], ['--sizes=201']) == first
  assert store.source_hash(root, ['pkg.bench'], ['--sizes=8']) != first
  (tmp_path / 'pkg' / 'sub' / 'deep.py').write_text('from ..used import X\n#\n')
  assert store.source_hash(root, ['pkg.bench'], ['--sizes=201']) != first


def test_source_files_follow_the_imports_by_a_computed_name():
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  files = store.source_files(root, ['zoo.configuration.agent_registry'])
  assert 'cr_dqn/agent.py' in files and 'qr_dqn/agent.py' in files
  files = store.source_files(root, ['zoo.configuration.suites'])
  assert 'zoo/suites/atari_suite.py' in files


def test_every_import_by_a_computed_name_is_listed():
  """A new importlib.import_module in the code must be declared in
  DYNAMIC_IMPORTS, or the benchmarks' hashes would miss what it imports."""
  root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
  found = set()
  for top in ('losses', 'networks', 'zoo', 'qr_dqn', 'cr_dqn', 'nc_cr_dqn',
              'nc_qr_dqn', os.path.join('scripts', 'benchmarks')):
    for directory, _, names in os.walk(os.path.join(root, top)):
      for name in names:
        path = os.path.join(directory, name)
        if name.endswith('.py') and 'import_module(' in open(path).read():
          found.add(os.path.relpath(path, root)[:-3].replace(os.sep, '.'))
  assert found == set(store.DYNAMIC_IMPORTS)


def test_pack_then_ingest_round_trip_keeps_only_text(tmp_path):
  d = _session(str(tmp_path / 'work'), 's1')
  with open(os.path.join(d, 'weights.npz'), 'wb') as f:
    f.write(b'\0' * 100)
  out = str(tmp_path / 'out')
  os.makedirs(out)
  archive = store.pack(d, out)
  assert os.path.basename(archive) == 'evidence-s1.tar.gz'
  with tarfile.open(archive) as tar:
    names = tar.getnames()
  assert 'sessions/s1/session.json' in names
  assert not any(n.endswith('.npz') for n in names)
  evidence = str(tmp_path / 'evidence')
  target = store.ingest(archive, evidence)
  assert store.done_pieces(store.load_sessions(evidence)) == {'p1': 's1'}
  assert target.endswith(os.path.join('sessions', 's1'))
  with pytest.raises(ValueError, match='already in'):
    store.ingest(archive, evidence)


def _archive(path, names):
  with tarfile.open(path, 'w:gz') as tar:
    for name in names:
      data = json.dumps({'id': 'x'}).encode()
      info = tarfile.TarInfo(name)
      info.size = len(data)
      tar.addfile(info, io.BytesIO(data))


@pytest.mark.parametrize('names', [
    ['sessions/x/session.json', '../evil.txt'],
    ['sessions/x/../../evil.json', 'sessions/x/session.json'],
    ['sessions/x/session.json', 'sessions/y/session.json'],
    ['sessions/x/log.txt'],
])
def test_ingest_refuses_what_is_not_one_session(tmp_path, names):
  path = str(tmp_path / 'a.tar.gz')
  _archive(path, names)
  with pytest.raises(ValueError):
    store.ingest(path, str(tmp_path / 'evidence'))
  assert not os.path.exists(tmp_path / 'evil.txt')


def test_figures_come_from_figures_csv_and_the_benchmarks(tmp_path):
  d = _session(str(tmp_path), 's1', csv=False)
  store.write_figures(d, [{'key': 'losses.n201.rlax_qr', 'what': 'rlax',
                           'value': '0.095', 'unit': 'ms'}])
  session, = store.load_sessions(str(tmp_path))
  session['benchmarks'] = [
      {'name': 'agent', 'status': 'ok', 'command': 'python -m b',
       'figures': {'frames_per_s': {'vector:64:u8': 9123.4}}},
      {'name': 'jitted_minatar', 'status': 'failed',
       'figures': {'steps_per_s_per_seed': {'1': 5.0}}},
      {'name': 'jitted_minatar', 'status': 'ok',
       'figures': {'steps_per_s_per_seed': {'256': 2000.0}}},
      {'name': 'losses', 'status': 'ok', 'figures': {}}]
  figures = store.figures(session)
  assert [(f['key'], f['value'], f['command'], f['session'])
          for f in figures] == [
              ('losses.n201.rlax_qr', '0.095', '', 's1'),
              ('atari.bench_agent.vector:64:u8', '9,123', 'python -m b', 's1'),
              ('minatar.jitted.x256', '2,000', '', 's1')]
  session['scale'] = 'rehearsal'
  assert store.figures(session) == []
