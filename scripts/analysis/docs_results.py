r"""The docs' result blocks: each is what its command prints from committed data.

  python -m scripts.analysis.docs_results           # check every block
  python -m scripts.analysis.docs_results --write   # rewrite stale blocks

A result block in README.md or a page under docs/ is

  <!-- results: python -m scripts.analysis.MODULE FLAGS -->
  ...the command's standard output, run from the repository's root...
  <!-- end results -->

Only scripts.analysis commands may fill a block: they read results and write
nothing else.
"""

import dataclasses
import glob
import os
import re
import shlex
import subprocess
import sys
from typing import Callable, List, Sequence, Tuple

from absl import flags

from zoo.configuration import cli

FLAGS = flags.FLAGS
REPO = os.path.dirname(os.path.dirname(os.path.dirname(
    os.path.abspath(__file__))))
START = re.compile(r'^<!-- results: (.*) -->$')
END = '<!-- end results -->'
PREFIX = ('python', '-m')
ALLOWED_MODULE = 'scripts.analysis.'
TIMEOUT_S = 600

# Runs a block's argv from the repository root; returns its standard output.
Runner = Callable[[Sequence[str]], str]


@dataclasses.dataclass
class Block:
  """One result block: where it is, its command, and what the page shows."""
  path: str
  line: int       # The 1-based line of its start marker.
  command: str
  shown: str      # The lines between the markers, newline-terminated.


def _argv(command: str, where: str) -> List[str]:
  argv = shlex.split(command)
  if (len(argv) < 3 or tuple(argv[:2]) != PREFIX
      or not argv[2].startswith(ALLOWED_MODULE)):
    raise ValueError(f'{where}: a result block\'s command is `python -m '
                     f'{ALLOWED_MODULE}MODULE ...`, got `{command}`.')
  return argv


def find_blocks(path: str, text: str) -> List[Block]:
  """Return the result blocks of one markdown file; ValueError if malformed."""
  blocks, lines = [], text.splitlines(keepends=True)
  start = None
  for number, line in enumerate(lines, 1):
    stripped = line.rstrip('\n')
    match = START.match(stripped)
    if match:
      if start is not None:
        raise ValueError(f'{path}:{number}: a result block starts inside the '
                         f'one of line {start[0]}; close it with `{END}`.')
      _argv(match.group(1), f'{path}:{number}')
      start = (number, match.group(1))
    elif stripped == END:
      if start is None:
        raise ValueError(f'{path}:{number}: `{END}` without a start marker.')
      blocks.append(Block(path, start[0], start[1],
                          ''.join(lines[start[0]:number - 1])))
      start = None
  if start is not None:
    raise ValueError(f'{path}:{start[0]}: the result block is not closed; '
                     f'add `{END}` after its output.')
  return blocks


def run_command(argv: Sequence[str]) -> str:
  """Run a block's command from the repository root; return its output."""
  argv = [sys.executable, *argv[1:]]
  try:
    result = subprocess.run(argv, cwd=REPO, capture_output=True, text=True,
                            timeout=TIMEOUT_S, check=False)
  except subprocess.TimeoutExpired:
    raise ValueError(f'`{shlex.join(argv[1:])}` ran over {TIMEOUT_S} s.'
                     ) from None
  if result.returncode:
    raise ValueError(f'`python {shlex.join(argv[1:])}` failed '
                     f'({result.returncode}): {result.stderr.strip()[-500:]}')
  return result.stdout


def rewrite(text: str, path: str, runner: Runner = run_command
            ) -> Tuple[str, List[Block]]:
  """Return `text` with its result blocks up to date, and the stale blocks."""
  lines, stale = text.splitlines(keepends=True), []
  for block in reversed(find_blocks(path, text)):
    output = runner(_argv(block.command, f'{path}:{block.line}'))
    output = output.strip('\n') + '\n'
    if output != block.shown:
      stale.insert(0, block)
      lines[block.line:block.line + len(block.shown.splitlines())] = [output]
  return ''.join(lines), stale


def markdown_files(root: str = REPO) -> List[str]:
  """Return README.md and the pages under docs/, relative to `root`."""
  pages = glob.glob(os.path.join(root, 'docs', '**', '*.md'), recursive=True)
  return ['README.md'] + sorted(os.path.relpath(p, root) for p in pages)


def update(root: str = REPO, runner: Runner = run_command,
           write: bool = False) -> List[Block]:
  """Return the blocks that do not show their command's output; with `write`,
  rewrite the files that hold them.
  """
  stale = []
  for name in markdown_files(root):
    path = os.path.join(root, name)
    with open(path, encoding='utf-8') as f:
      text, found = rewrite(f.read(), name, runner)
    stale += found
    if write and found:
      with open(path + '.tmp', 'w', encoding='utf-8') as f:
        f.write(text)
      os.replace(path + '.tmp', path)  # Never a half-written page.
  return stale


def define_flags() -> None:
  """Define this entry point's flags (only when run)."""
  flags.DEFINE_bool('write', False, 'Rewrite the stale blocks.')


def main(unused_argv):
  try:
    stale = update(write=FLAGS.write)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  if stale and FLAGS.write:
    print(f'rewrote {", ".join(dict.fromkeys(b.path for b in stale))}')
  elif stale:
    sys.exit('Stale result blocks (their command prints something else):\n'
             + ''.join(f'  {b.path}:{b.line}: {b.command}\n' for b in stale)
             + 'Fix: python -m scripts.analysis.docs_results --write, then '
             'review and commit the pages.')
  else:
    print('every result block is current')


if __name__ == '__main__':
  define_flags()
  cli.run(main)
