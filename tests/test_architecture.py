"""The import rules of ARCHITECTURE.md, checked on every module's imports.

Every import statement counts, also one inside a function; importlib's
dynamic imports (the agent registry's discovery, suite_by_name) do not.
"""

import ast
import os
from typing import Dict, List, Set, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
BOTTOM = ('losses', 'networks')
# The command-line tools sit under scripts/, one room per subpackage.
SCRIPTS = ('scripts.analysis', 'scripts.experiments', 'scripts.benchmarks',
           'scripts.campaign')
# zoo's rooms, bottom to top: a room imports only the rooms below it.
ZOO_ROOMS = ('zoo.storage', 'zoo.environments', 'zoo.replay', 'zoo.agent',
             'zoo.configuration', 'zoo.loops', 'zoo.suites')
MAX_ZOO_MODULE_LINES = 400
LAYERS = BOTTOM + ('zoo',) + ZOO_ROOMS + ('scripts',) + SCRIPTS
NOT_PROJECT = ('tests', 'docs')


def project_packages(root: str = ROOT) -> List[str]:
  """Return the top-level packages of the project (tests excluded)."""
  return sorted(
      name for name in os.listdir(root)
      if name not in NOT_PROJECT and not name.startswith('.')
      and os.path.isfile(os.path.join(root, name, '__init__.py')))


def module_files(root: str = ROOT) -> Dict[str, str]:
  """Return {dotted module name: file path} of every project module."""
  modules = {}
  for package in project_packages(root):
    for directory, _, names in os.walk(os.path.join(root, package)):
      for name in names:
        if name.endswith('.py'):
          path = os.path.join(directory, name)
          parts = os.path.relpath(path, root)[:-3].split(os.sep)
          if parts[-1] == '__init__':
            parts = parts[:-1]
          modules['.'.join(parts)] = path
  return modules


def imported_modules(source: str, module: str, is_package: bool,
                     known: Set[str]) -> Set[str]:
  """Return the project modules that `source` (module `module`) imports.

  `from a import b` names a.b when that is a module, else a.
  """
  package = module if is_package else module.rpartition('.')[0]
  found = set()
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, ast.Import):
      names = [alias.name for alias in node.names]
    elif isinstance(node, ast.ImportFrom):
      base = node.module or ''
      if node.level:
        anchor = package.split('.')
        anchor = anchor[:len(anchor) - (node.level - 1)]
        base = '.'.join(anchor + ([base] if base else []))
      names = [f'{base}.{alias.name}' if f'{base}.{alias.name}' in known
               else base for alias in node.names]
    else:
      continue
    for name in names:
      # The longest prefix that is a project module ('zoo.x.y' -> 'zoo.x').
      parts = name.split('.')
      for end in range(len(parts), 0, -1):
        if '.'.join(parts[:end]) in known:
          found.add('.'.join(parts[:end]))
          break
  found.discard(module)
  return found


def import_graph(root: str = ROOT) -> Dict[str, Set[str]]:
  """Return {module: project modules it imports} over the project."""
  files = module_files(root)
  graph = {}
  for module, path in files.items():
    with open(path, encoding='utf-8') as f:
      graph[module] = imported_modules(
          f.read(), module, path.endswith('__init__.py'), set(files))
  return graph


def room(module: str) -> str:
  """Return a module's room: its top-level package, scripts.<tool> or
  zoo.<room>."""
  parts = module.split('.')
  if parts[0] in ('scripts', 'zoo') and len(parts) > 1:
    return '.'.join(parts[:2])
  return parts[0]


def allowed(importer: str, imported: str, agents: Set[str]) -> bool:
  """Return whether room `importer` may import room `imported`."""
  if importer == imported:
    return True
  if importer in BOTTOM:
    return False
  if imported == 'scripts.benchmarks':
    return False
  if importer == 'zoo':
    return imported in BOTTOM
  if importer in ZOO_ROOMS:
    return imported in BOTTOM + ('zoo',) or (
        imported in ZOO_ROOMS and
        ZOO_ROOMS.index(imported) < ZOO_ROOMS.index(importer))
  if importer in agents:
    return imported in BOTTOM + ('zoo',) + ZOO_ROOMS
  if importer == 'scripts.analysis':
    return imported not in ('scripts.experiments',)
  # scripts.experiments may import scripts.analysis; scripts.benchmarks
  # anything but itself.
  return True


def violations(graph: Dict[str, Set[str]]) -> List[Tuple[str, str]]:
  """Return the (module, imported module) pairs that break the rules."""
  agents = {room(m) for m in graph} - set(LAYERS)
  return sorted((m, i) for m, imports in graph.items() for i in imports
                if not allowed(room(m), room(i), agents))


def cycles(graph: Dict[str, Set[str]]) -> List[List[str]]:
  """Return one module cycle per strongly connected group (Tarjan)."""
  index, low, stack, on_stack, found = {}, {}, [], set(), []

  def visit(v):
    index[v] = low[v] = len(index)
    stack.append(v)
    on_stack.add(v)
    for w in sorted(graph.get(v, ())):
      if w not in index:
        visit(w)
        low[v] = min(low[v], low[w])
      elif w in on_stack:
        low[v] = min(low[v], index[w])
    if low[v] == index[v]:
      group = []
      while True:
        w = stack.pop()
        on_stack.discard(w)
        group.append(w)
        if w == v:
          break
      # A package's __init__ importing its own modules is no circle.
      group = [m for m in group if not any(m2.startswith(m + '.')
                                           for m2 in group)]
      if len(group) > 1:
        found.append(sorted(group))

  for v in sorted(graph):
    if v not in index:
      visit(v)
  return found


GRAPH = import_graph()


def test_the_graph_sees_the_project():
  packages = set(project_packages())
  assert {'losses', 'networks', 'zoo', 'scripts', 'cr_dqn', 'qr_dqn'} <= packages
  assert not {'analysis', 'experiments', 'benchmarks'} & packages
  assert {room(m) for m in GRAPH} >= set(LAYERS)
  assert 'zoo.environments.atari_env' in GRAPH['zoo.suites.atari_suite']
  assert 'scripts.analysis.run_data' in GRAPH['scripts.analysis.aggregate']


def test_every_import_follows_the_rules():
  assert violations(GRAPH) == []


def test_no_module_imports_itself_back():
  assert cycles(GRAPH) == []


def test_zoo_is_rooms_of_small_modules():
  files = module_files()
  rooms = {room(m) for m in files if m.startswith('zoo.')}
  assert rooms == set(ZOO_ROOMS)
  too_long = {}
  for module, path in files.items():
    if module.startswith('zoo'):
      with open(path, encoding='utf-8') as f:
        lines = len(f.readlines())
      if lines > MAX_ZOO_MODULE_LINES:
        too_long[module] = lines
  assert too_long == {}


def _graph_of(tmp_path, sources):
  for path, source in sources.items():
    full = tmp_path / path
    full.parent.mkdir(parents=True, exist_ok=True)
    for parent in full.relative_to(tmp_path).parents:
      if str(parent) != '.':
        (tmp_path / parent / '__init__.py').touch()
    full.write_text(source)
  return import_graph(str(tmp_path))


@pytest.mark.parametrize('path, source', [
    ('losses/x.py', 'from zoo import replay'),
    ('networks/x.py', 'import losses'),
    ('zoo/x.py', 'from cr_dqn import run_atari'),
    ('zoo/x.py', 'def f():\n  from scripts.analysis import run_data'),
    ('zoo/x.py', 'import scripts.experiments.synthetic'),
    ('zoo/environments/x.py', 'from zoo.replay import frame_replay'),
    ('zoo/storage/x.py', 'from zoo.loops import runner'),
    ('zoo/storage/x.py', 'from zoo.environments import environment'),
    ('zoo/configuration/x.py', 'from zoo.suites import atari_suite'),
    ('cr_dqn/x.py', 'from scripts.analysis import run_data'),
    ('cr_dqn/x.py', 'from qr_dqn import run_atari'),
    ('scripts/analysis/x.py', 'from scripts.experiments import synthetic'),
    ('scripts/analysis/x.py', 'from scripts.benchmarks import harness'),
    ('scripts/experiments/x.py', 'from scripts.benchmarks import harness'),
])
def test_a_broken_rule_is_found(tmp_path, path, source):
  graph = _graph_of(tmp_path, {
      path: source, 'zoo/replay/frame_replay.py': '',
      'zoo/loops/runner.py': '', 'zoo/suites/atari_suite.py': '',
      'zoo/environments/environment.py': '',
      'scripts/analysis/run_data.py': '',
      'scripts/experiments/synthetic.py': '',
      'scripts/benchmarks/harness.py': '',
      'cr_dqn/run_atari.py': '', 'qr_dqn/run_atari.py': '',
      'losses/__init__.py': ''})
  module = path[:-3].replace('/', '.')
  assert [m for m, _ in violations(graph)] == [module]


def test_allowed_imports_and_a_circle(tmp_path):
  graph = _graph_of(tmp_path, {
      'zoo/agent/a.py': 'from zoo.agent import b\nimport losses',
      'zoo/agent/b.py': 'def f():\n  from . import a',
      'zoo/loops/l.py': 'from zoo.storage import s\nfrom zoo.agent import a',
      'zoo/agent/c.py': 'from zoo.storage import s',
      'zoo/storage/s.py': 'import losses',
      'cr_dqn/run.py': 'from zoo.agent import a\nimport networks\n'
                       'from zoo.loops import l',
      'scripts/experiments/e.py': 'from scripts.analysis import r',
      'scripts/analysis/r.py': 'from zoo.agent import a',
      'losses/__init__.py': 'from losses import sorting',
      'losses/sorting.py': '', 'networks/__init__.py': ''})
  assert violations(graph) == []
  assert cycles(graph) == [['zoo.agent.a', 'zoo.agent.b']]
