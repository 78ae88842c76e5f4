"""Every code name the architecture page, the docs and zoo's docstrings cite exists.

In ARCHITECTURE.md and every page under docs/, each code span and code block
is read for dotted names that start with a project package (`zoo.`,
`losses.`, `networks.`, `scripts.`, an agent package), each `::: name`
(mkdocstrings) and each path ending in `.py`; in a code span also for
`module.name` where `module` is the own name of one project module only
(`driver.Loop`). zoo's docstrings and comments are read for the dotted names
and paths. A dotted name resolves when its longest module prefix is a module
of the repository and the rest is an attribute chain of it (a module-level
name, then a class's method, property, field or nested name); a path
resolves when the file exists (a bare file name: a tracked file has that
name). Names are resolved from the source (ast), importing a module only when
the source does not settle it (inherited or computed attributes): fast.

Not checked, by design: placeholders (a name stops at `<...>`:
`zoo.suites.<name>_suite`); other projects' files and the script a page
holds (OTHER_FILES).
"""

import ast
import functools
import importlib
import io
import os
import re
import subprocess
import tokenize
from typing import Iterator, List, Optional, Tuple

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
PACKAGES = ('zoo', 'losses', 'networks', 'scripts', 'cr_dqn', 'qr_dqn', 'iqn',
            'nc_cr_dqn', 'nc_qr_dqn')
# Recorded history, not the present code (none now).
EXCLUDED_PAGES = ()

_FENCE = re.compile(r'^ *```.*?^ *```', re.M | re.S)
_SPAN = re.compile(r'`([^`]+)`')
_MKDOCSTRINGS = re.compile(r'^::: *([\w.]+)', re.M)
_DOTTED = re.compile(r'(?<![\w./<>-])(?:%s)(?:\.[A-Za-z_]\w*)+(?![\w<>])'
                     % '|'.join(PACKAGES))
_PATH = re.compile(r'(?<![\w./<>-])((?:[\w.-]+/)*[\w-]+\.py)(?![\w<>])')
# `module.name` in a code span, module a project module's own name.
_SHORT = re.compile(r'(?<![\w./<>-])[a-z_]\w*(?:\.[A-Za-z_]\w*)+(?![\w<>])')
FILE_SUFFIXES = ('py', 'md', 'csv', 'png', 'json', 'npz', 'npy', 'gz')
# Other projects' files, named as theirs (DQN Zoo's, pgx's) or a script the
# page itself holds (docs/smoothed-cramer.md's bias.py).
OTHER_FILES = ('processors.py', 'gym_atari.py', 'dqn_zoo/atari_data.py',
               'examples/dqn.py', 'examples/random_play.py', 'bias.py')


@functools.lru_cache(maxsize=None)
def short_names(root: str) -> dict:
  """Return {a module's own name: its dotted name} where only one has it."""
  found = {}
  for package in PACKAGES:
    for directory, _, names in os.walk(os.path.join(root, package)):
      for name in names:
        if name.endswith('.py'):
          parts = os.path.relpath(os.path.join(directory, name),
                                  root)[:-3].split(os.sep)
          if parts[-1] == '__init__':
            parts.pop()
          found.setdefault(parts[-1], []).append('.'.join(parts))
  return {short: full[0] for short, full in found.items()
          if len(full) == 1 and short not in PACKAGES}


def code_names(text: str, root: str = ROOT) -> Iterator[Tuple[int, str, str]]:
  """Yield (line, name as written, dotted name or path) of `text`'s code.

  A short `module.name` (in a code span, module a unique module name of the
  project: `driver.Loop`) is yielded with its module's full dotted name.
  """
  chunks = []
  for match in _FENCE.finditer(text):
    chunks.append((match.start(), match.group(), False))
  # Blanked out, keeping every offset, so that spans give their lines.
  prose = _FENCE.sub(lambda m: re.sub(r'[^\n]', ' ', m.group()), text)
  for match in _SPAN.finditer(prose):
    chunks.append((match.start(1), match.group(1), True))
  short = short_names(root)
  for start, chunk, is_span in sorted(chunks):
    for pattern in (_DOTTED, _PATH) + ((_SHORT,) if is_span else ()):
      for match in pattern.finditer(chunk):
        line = text.count('\n', 0, start + match.start()) + 1
        name = match.group(0)
        if pattern is not _SHORT:
          yield line, name, name
          continue
        first, _, rest = name.partition('.')
        if first in short and rest.split('.')[0] not in FILE_SUFFIXES:
          yield line, name, f'{short[first]}.{rest}'
  for match in _MKDOCSTRINGS.finditer(text):
    yield (text.count('\n', 0, match.start()) + 1, match.group(1),
           match.group(1))


@functools.lru_cache(maxsize=None)
def _tracked_basenames(root: str) -> frozenset:
  files = subprocess.run(['git', 'ls-files'], cwd=root, capture_output=True,
                         text=True, check=True).stdout.split()
  return frozenset(os.path.basename(f) for f in files)


def _module_file(root: str, module: str) -> Optional[str]:
  base = os.path.join(root, *module.split('.'))
  for path in (base + '.py', os.path.join(base, '__init__.py')):
    if os.path.isfile(path):
      return path
  return None


@functools.lru_cache(maxsize=None)
def _parse(path: str) -> ast.Module:
  with open(path) as f:
    return ast.parse(f.read())


def _names_in(body: List[ast.stmt]) -> dict:
  """Return {name: node} of what a module or class body binds."""
  names = {}
  for node in body:
    if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef,
                         ast.ClassDef)):
      names[node.name] = node
    elif isinstance(node, ast.Assign):
      for target in node.targets:
        for leaf in ast.walk(target):
          if isinstance(leaf, ast.Name):
            names[leaf.id] = node
    elif isinstance(node, ast.AnnAssign) and isinstance(node.target,
                                                        ast.Name):
      names[node.target.id] = node
    elif isinstance(node, (ast.Import, ast.ImportFrom)):
      for alias in node.names:
        names[(alias.asname or alias.name).split('.')[0]] = node
    elif isinstance(node, (ast.If, ast.Try)):
      names.update(_names_in(node.body))
      for handler in getattr(node, 'handlers', ()):
        names.update(_names_in(handler.body))
      names.update(_names_in(node.orelse))
  return names


def _static(root: str, module: str, attrs: List[str]) -> bool:
  """Return whether the source alone shows `module`.`attrs` exists."""
  path = _module_file(root, module)
  body = _parse(path).body
  for i, attr in enumerate(attrs):
    if i == 0 and _module_file(root, f'{module}.{attr}'):
      return _static(root, f'{module}.{attr}', attrs[1:]) if attrs[1:] else True
    node = _names_in(body).get(attr)
    if node is None:
      return False
    if isinstance(node, ast.ImportFrom) and i == 0 and not node.level:
      alias = next(a for a in node.names if (a.asname or a.name) == attr)
      target = f'{node.module}.{alias.name}'
      return resolve(root, '.'.join([target] + attrs[1:])) is None
    if isinstance(node, ast.ClassDef):
      body = node.body
    elif attrs[i + 1:]:
      return False
  return True


def resolve(root: str, name: str) -> Optional[str]:
  """Return why `name` (dotted or a .py path) does not resolve, or None."""
  if name.endswith('.py') and ('/' in name or '.' not in name[:-3]):
    if '/' in name:
      return None if os.path.isfile(os.path.join(root, name)) else 'no file'
    return None if name in _tracked_basenames(root) else 'no such file'
  parts = name.split('.')
  for end in range(len(parts), 0, -1):
    module = '.'.join(parts[:end])
    if _module_file(root, module):
      break
  else:
    return 'no module'
  attrs = parts[end:]
  if not attrs or _static(root, module, attrs):
    return None
  # Inherited or computed attributes: import and look.
  try:
    value = importlib.import_module(module)
  except Exception as e:  # pylint: disable=broad-except
    return f'{module} does not import: {e!r}'
  for attr in attrs:
    fields = getattr(value, '__dataclass_fields__', None) or getattr(
        value, '_fields', ())
    if attr in fields:
      return None if attr == attrs[-1] else 'attribute of a field'
    if not hasattr(value, attr):
      return f'{module} has no {".".join(attrs)}'
    value = getattr(value, attr)
  return None


def unresolved(root: str, page: str) -> List[str]:
  """Return 'page:line: name (why)' for each name of `page` that is stale."""
  with open(os.path.join(root, page)) as f:
    text = f.read()
  problems = []
  for line, written, name in code_names(text, root):
    why = None if name in OTHER_FILES else resolve(root, name)
    if why:
      shown = written if written == name else f'{written} = {name}'
      problems.append(f'{page}:{line}: {shown} ({why})')
  return sorted(problems, key=lambda p: int(p.split(':')[1]))


def pages(root: str = ROOT) -> List[str]:
  """Return ARCHITECTURE.md and the docs' pages, less the excluded ones."""
  found = ['ARCHITECTURE.md']
  for directory, _, names in sorted(os.walk(os.path.join(root, 'docs'))):
    for name in sorted(names):
      if name.endswith('.md'):
        page = os.path.relpath(os.path.join(directory, name), root)
        if page not in EXCLUDED_PAGES:
          found.append(page)
  return found


def code_comments(source: str) -> Iterator[Tuple[int, str]]:
  """Yield (line, text) of a module's docstrings and comments."""
  for token in tokenize.generate_tokens(io.StringIO(source).readline):
    if token.type == tokenize.COMMENT:
      yield token.start[0], token.string
  for node in ast.walk(ast.parse(source)):
    if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef,
                         ast.AsyncFunctionDef)) and ast.get_docstring(node):
      yield node.body[0].lineno, ast.get_docstring(node)


@pytest.mark.parametrize('page', pages())
def test_every_code_name_of_the_page_resolves(page):
  assert not unresolved(ROOT, page)


def test_every_dotted_name_and_path_in_zoo_docstrings_resolves():
  problems = []
  for directory, _, names in sorted(os.walk(os.path.join(ROOT, 'zoo'))):
    for name in sorted(names):
      if name.endswith('.py'):
        path = os.path.join(directory, name)
        with open(path) as f:
          source = f.read()
        for line, text in code_comments(source):
          for pattern in (_DOTTED, _PATH):
            for match in pattern.finditer(text):
              found = match.group(0)
              if found not in OTHER_FILES and resolve(ROOT, found):
                problems.append(
                    f'{os.path.relpath(path, ROOT)}:{line}: {found}')
  assert not problems


def test_a_stale_name_fails_with_its_name_and_file(tmp_path):
  (tmp_path / 'zoo' / 'room').mkdir(parents=True)
  (tmp_path / 'zoo' / '__init__.py').write_text('')
  (tmp_path / 'zoo' / 'room' / '__init__.py').write_text('')
  (tmp_path / 'zoo' / 'room' / 'mod.py').write_text(
      'import typing\n\n'
      'class Record(typing.NamedTuple):\n'
      '  field: int\n\n'
      '  @property\n'
      '  def derived(self):\n'
      '    return 1\n\n'
      'def run():\n'
      '  pass\n')
  (tmp_path / 'page.md').write_text(
      'Good: `zoo.room.mod.run`, `zoo.room.mod.Record.field`,\n'
      '`zoo.room.mod.Record.derived`, `zoo/room/mod.py`, `mod.py`,\n'
      '`mod.Record.field`, `room.mod.run`,\n'
      '`zoo.room.<name>_mod`, `<package>/run_<name>.py`.\n'
      '```python\nzoo.room.mod.run()\n```\n'
      'Bad: `zoo.room.mod.walk()`, `zoo.room.gone.run`,\n'
      '`zoo.room.mod.Record.missing`, `zoo/room/gone.py`, `mod.Record.gone`.\n'
      '```python\nzoo.room.mod.Recrod(field=1)\n```\n')
  subprocess.run(['git', 'init', '-q'], cwd=tmp_path, check=True)
  subprocess.run(['git', 'add', '.'], cwd=tmp_path, check=True)
  problems = unresolved(str(tmp_path), 'page.md')
  assert [p.split(' (')[0] for p in problems] == [
      'page.md:8: zoo.room.mod.walk', 'page.md:8: zoo.room.gone.run',
      'page.md:9: zoo.room.mod.Record.missing', 'page.md:9: zoo/room/gone.py',
      'page.md:9: mod.Record.gone = zoo.room.mod.Record.gone',
      'page.md:11: zoo.room.mod.Recrod']
