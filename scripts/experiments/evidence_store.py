"""The results folder (evidence/): sessions, what they completed, archives.

Layout: evidence/sessions/<id>/ holds one command's output: session.json (the
machine, the date, the command, the code version, what ran and how it ended),
log.txt, benchmarks/<name>.txt (each benchmark's output) and
runs/<piece>/<preset>/<agent>/<game>/seed_<s>/ (results.csv, run.json). A
session of scale 'recorded' holds figures measured before the evidence command
existed, in figures.csv (one row a figure: key, what, value, unit, command,
note), with the machine and date in its session.json. Only
CSVs, JSON and text: never weights or replays. An archive
(evidence-<id>.tar.gz) holds sessions/<id>/ and is unpacked into the folder by
`python -m scripts.experiments.evidence --ingest=ARCHIVE`.

What the folder holds is done: a piece counts as done when a session of the
full scale completed it and its CSVs are there.
"""

import ast
import csv
import glob
import hashlib
import json
import os
import tarfile
from typing import Any, Dict, Iterable, List, Optional, Tuple

SESSIONS = 'sessions'
SESSION_FILE = 'session.json'
# The packages of a session's code version (shown beside its figures; a
# benchmark's own figure follows source_hash instead).
CODE_PACKAGES = ('losses', 'networks', 'zoo', 'qr_dqn', 'cr_dqn', 'nc_cr_dqn',
                 'nc_qr_dqn', 'iqn', os.path.join('scripts', 'benchmarks'))
MAX_ARCHIVE_BYTES = 16 * 2**20
FIGURES_FILE = 'figures.csv'
FIGURE_COLUMNS = ('key', 'what', 'value', 'unit', 'command', 'note')
# Sessions whose figures and runs are results (a rehearsal's are not).
RESULT_SCALES = ('full', 'recorded')


def code_version(root: str, packages: Iterable[str] = CODE_PACKAGES) -> str:
  """Return a hash of the measured code's .py files (no git needed)."""
  digest = hashlib.sha256()
  for package in packages:
    top = os.path.join(root, package)
    paths = []
    for directory, dirs, names in os.walk(top):
      dirs[:] = sorted(d for d in dirs if d != '__pycache__')
      paths += [os.path.join(directory, n) for n in names if n.endswith('.py')]
    for path in sorted(paths):
      digest.update(os.path.relpath(path, root).encode() + b'\0')
      with open(path, 'rb') as f:
        digest.update(f.read() + b'\0')
  return digest.hexdigest()[:12]


def load_sessions(evidence_dir: str) -> List[Dict[str, Any]]:
  """Return every session.json of the folder, oldest first, with 'dir'."""
  top = os.path.join(evidence_dir, SESSIONS)
  if not os.path.isdir(top):
    return []
  out = []
  for name in sorted(os.listdir(top)):
    path = os.path.join(top, name, SESSION_FILE)
    if os.path.isfile(path):
      try:
        with open(path) as f:
          session = json.load(f)
      except (ValueError, UnicodeDecodeError) as e:
        raise ValueError(
            f'{path} is damaged ({e}). Restore it (git checkout -- {path}) '
            'or ingest its archive again into an empty folder.') from e
      session['dir'] = os.path.join(top, name)
      out.append(session)
  return out


def _csvs_present(session: Dict[str, Any], piece: Dict[str, Any]) -> bool:
  paths = [p for run in piece.get('runs', ()) for p in run.get('csvs', ())]
  return bool(paths) and all(
      os.path.isfile(os.path.join(session['dir'], p)) for p in paths)


def done_pieces(sessions: Iterable[Dict[str, Any]]) -> Dict[str, str]:
  """Return {piece id: id of the first session that completed it}."""
  done = {}
  for session in sessions:
    if session.get('scale') != 'full':
      continue
    for piece in session.get('pieces', ()):
      if (piece.get('status') == 'complete' and piece['id'] not in done and
          _csvs_present(session, piece)):
        done[piece['id']] = session['id']
  return done


def last_measured(sessions: Iterable[Dict[str, Any]], device_kind: str,
                  name: str, code: Optional[str] = None) -> Optional[str]:
  """Return the id of the newest session that measured benchmark `name` on
  this device kind (with this benchmarked code, when given); None: never."""
  found = None
  for session in sessions:
    if session.get('machine', {}).get('device_kind') != device_kind:
      continue
    if any(b.get('name') == name and b.get('status') == 'ok' and
           (code is None or b.get('code') == code)
           for b in session.get('benchmarks', ())):
      found = session['id']
  return found


# Modules that import first-party modules by a computed name, and the files
# (globs under the root) they may import that way: a static reading of the
# imports cannot see them. tests/test_experiments_evidence_store.py checks
# that every importlib.import_module of the code is listed here.
DYNAMIC_IMPORTS = {
    'zoo.configuration.agent_registry': ('*/agent.py',),
    'zoo.agent.learning': ('losses/*.py', 'zoo/agent/*.py'),
    'zoo.configuration.suites': ('zoo/suites/*_suite.py',),
    'zoo.loops.runner': ('zoo/loops/*_loop.py',),
    'zoo.environments.minatar_jax_env': (),  # pgx's games: not ours.
}


def _module_path(root: str, module: str) -> Optional[str]:
  """Return the file of a first-party module under root, else None."""
  base = os.path.join(root, *module.split('.'))
  for path in (base + '.py', os.path.join(base, '__init__.py')):
    if os.path.isfile(path):
      return path
  return None


# {(path, module, mtime, size): names}: parsing is the slow part of a hash.
_IMPORTED: Dict[Tuple[str, str, int, int], List[str]] = {}


def _imported(path: str, module: str) -> List[str]:
  """Return the absolute names a module's imports name (anywhere in it)."""
  stat = os.stat(path)
  key = (path, module, stat.st_mtime_ns, stat.st_size)
  if key not in _IMPORTED:
    _IMPORTED[key] = _parse_imports(path, module)
  return _IMPORTED[key]


def _parse_imports(path: str, module: str) -> List[str]:
  with open(path, 'rb') as f:
    tree = ast.parse(f.read(), path)
  package = (module if path.endswith('__init__.py')
             else module.rpartition('.')[0])
  out = []
  for node in ast.walk(tree):
    if isinstance(node, ast.Import):
      out += [a.name for a in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        parts = package.split('.')
        parts = parts[:len(parts) - node.level + 1]
        base = '.'.join(parts + ([node.module] if node.module else []))
      out.append(base)
      out += [f'{base}.{a.name}' for a in node.names]
  return out


def source_files(root: str, modules: Iterable[str]) -> List[str]:
  """Return the first-party files (relative to root) the modules import,
  themselves and their packages included, followed through every import."""
  todo, seen, found = list(modules), set(), set()
  while todo:
    module = todo.pop()
    if not module or module in seen:
      continue
    seen.add(module)
    path = _module_path(root, module)
    if path is None:
      continue
    found.add(os.path.relpath(path, root))
    parts = module.split('.')
    todo += ['.'.join(parts[:i]) for i in range(1, len(parts))]
    todo += _imported(path, module)
    for pattern in DYNAMIC_IMPORTS.get(module, ()):
      for match in glob.glob(os.path.join(root, pattern)):
        rel = os.path.relpath(match, root)[:-len('.py')]
        todo.append(rel.replace(os.sep, '.'))
  return sorted(found)


def source_hash(root: str, modules: Iterable[str],
                extra: Iterable[str] = ()) -> str:
  """Return a hash of the source files the modules depend on and of `extra`
  (e.g. the benchmark's command line): a figure of the same hash on the same
  device kind need not be measured again."""
  digest = hashlib.sha256()
  for rel in source_files(root, modules):
    digest.update(rel.encode() + b'\0')
    with open(os.path.join(root, rel), 'rb') as f:
      digest.update(f.read() + b'\0')
  for item in extra:
    digest.update(item.encode() + b'\0')
  return digest.hexdigest()[:12]


def write_figures(session_dir: str, rows: Iterable[Dict[str, str]]) -> None:
  """Write a session's figures.csv (FIGURE_COLUMNS, in the given order)."""
  os.makedirs(session_dir, exist_ok=True)
  with open(os.path.join(session_dir, FIGURES_FILE), 'w', newline='') as f:
    writer = csv.DictWriter(f, FIGURE_COLUMNS, lineterminator='\n')
    writer.writeheader()
    for row in rows:
      writer.writerow({k: row.get(k, '') for k in FIGURE_COLUMNS})


# The figures a benchmark's parsed output gives: {benchmark name: (its
# figures' field, key, what, unit)}, keyed and described by each entry's name.
BENCHMARK_FIGURES = {
    'agent': ('frames_per_s', 'atari.bench_agent.{}',
              'training frames/s, {} (`bench_agent`, Breakout)', 'frames/s'),
    'jitted_minatar': ('steps_per_s_per_seed', 'minatar.jitted.x{}',
                       'jitted MinAtar loop, {} vmapped seeds '
                       '(`bench_jitted_minatar`)', 'steps/s per seed'),
}


def _benchmark_figures(bench: Dict[str, Any]) -> List[Dict[str, str]]:
  rows = bench.get('figures', {}).get('rows')
  if rows:  # The benchmark printed its figures whole.
    return [{'key': r['key'], 'what': r.get('what', r['key']),
             'value': r['value'], 'unit': r.get('unit', ''),
             'command': bench.get('command', ''), 'note': ''} for r in rows]
  if bench['name'] not in BENCHMARK_FIGURES:
    return []
  field, key, what, unit = BENCHMARK_FIGURES[bench['name']]
  return [{'key': key.format(name), 'what': what.format(name),
           'value': f'{value:,.0f}', 'unit': unit,
           'command': bench.get('command', ''), 'note': ''}
          for name, value in bench.get('figures', {}).get(field, {}).items()]


def figures(session: Dict[str, Any]) -> List[Dict[str, str]]:
  """Return a result session's figures: its figures.csv rows, then those
  parsed from its benchmarks; each with 'session' and 'date'."""
  if session.get('scale') not in RESULT_SCALES:
    return []
  rows = []
  path = os.path.join(session['dir'], FIGURES_FILE)
  if os.path.isfile(path):
    with open(path, newline='') as f:
      rows += list(csv.DictReader(f))
  for bench in session.get('benchmarks', ()):
    if bench.get('status') == 'ok':
      rows += _benchmark_figures(bench)
  for row in rows:
    row.update(session=session['id'], date=session.get('date_utc', '?'))
  return rows


def write_session(session_dir: str, session: Dict[str, Any]) -> None:
  """Write session.json (atomically: a kill leaves the old one)."""
  os.makedirs(session_dir, exist_ok=True)
  path = os.path.join(session_dir, SESSION_FILE)
  record = {k: v for k, v in session.items() if k != 'dir'}
  with open(path + '.tmp', 'w') as f:
    json.dump(record, f, indent=1, sort_keys=True)
    f.write('\n')
  os.replace(path + '.tmp', path)


def pack(session_dir: str, output_dir: str) -> str:
  """Pack a session folder into output_dir/evidence-<id>.tar.gz.

  Only text, CSV and JSON files go in (never weights or replays); the archive
  holds sessions/<id>/.... Raises ValueError if it exceeds MAX_ARCHIVE_BYTES.
  """
  session_id = os.path.basename(os.path.normpath(session_dir))
  path = os.path.join(output_dir, f'evidence-{session_id}.tar.gz')
  with tarfile.open(path + '.tmp', 'w:gz') as tar:
    for directory, dirs, names in os.walk(session_dir):
      dirs.sort()
      for name in sorted(names):
        if os.path.splitext(name)[1] not in ('.csv', '.json', '.txt', '.md'):
          continue
        full = os.path.join(directory, name)
        arcname = os.path.join(SESSIONS, session_id,
                               os.path.relpath(full, session_dir))
        tar.add(full, arcname=arcname, recursive=False)
  os.replace(path + '.tmp', path)
  size = os.path.getsize(path)
  if size > MAX_ARCHIVE_BYTES:
    raise ValueError(f'{path} is {size / 2**20:.1f} MiB, over the '
                     f'{MAX_ARCHIVE_BYTES / 2**20:.0f} MiB that can come back.')
  return path


def ingest(archive: str, evidence_dir: str) -> str:
  """Unpack an archive of pack() into the folder; return the session dir.

  Refuses members outside sessions/<one id>/, links and special files, and a
  session the folder already holds.
  """
  with tarfile.open(archive, 'r:*') as tar:
    members = tar.getmembers()
    ids = set()
    for m in members:
      parts = m.name.split('/')
      if (os.path.isabs(m.name) or '..' in parts or len(parts) < 3 or
          parts[0] != SESSIONS or not (m.isfile() or m.isdir())):
        raise ValueError(f'{archive}: unexpected member {m.name!r}.')
      ids.add(parts[1])
    if len(ids) != 1:
      raise ValueError(f'{archive}: holds {len(ids)} sessions, expected 1.')
    session_id = ids.pop()
    target = os.path.join(evidence_dir, SESSIONS, session_id)
    if os.path.exists(target):
      raise ValueError(f'{target} exists: the archive\'s recorded run set is '
                       'already in the results folder.')
    if not any(m.name == f'{SESSIONS}/{session_id}/{SESSION_FILE}'
               for m in members):
      raise ValueError(f'{archive}: no {SESSION_FILE}.')
    for m in members:
      if m.isfile():
        out = os.path.join(evidence_dir, m.name)
        os.makedirs(os.path.dirname(out), exist_ok=True)
        with tar.extractfile(m) as src, open(out, 'wb') as dst:
          dst.write(src.read())
  return target
