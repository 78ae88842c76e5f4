"""The markdown tables that every tool prints or writes, and CSV numbers."""

import math
from typing import Iterable, List, Sequence


def markdown(header: Sequence[str], rows: Iterable[Sequence],
             align: str = '') -> List[str]:
  """Return a markdown table's lines: the header, its rule, one per row.

  align: one letter per column, 'l' (the default) or 'r' (right-aligned,
  '---:'); cells are written with str().
  """
  align = align.ljust(len(header), 'l')
  if set(align) - {'l', 'r'} or len(align) != len(header):
    raise ValueError(f'align {align!r}: one l or r per column of {header}.')
  lines = [line(header),
           '|' + '|'.join('---:' if a == 'r' else '---' for a in align) + '|']
  for row in rows:
    row = list(row)
    if len(row) != len(header):
      raise ValueError(f'row {row} has {len(row)} cells; the header has '
                       f'{len(header)}.')
    lines.append(line(row))
  return lines


def line(cells: Iterable) -> str:
  """Return one row of a markdown table (to print rows as they come)."""
  return '| ' + ' | '.join(str(c) for c in cells) + ' |'


def number(value: float) -> str:
  """Return a number for a CSV cell: 6 significant digits, '' if NaN."""
  return '' if math.isnan(value) else f'{value:.6g}'
