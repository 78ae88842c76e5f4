"""The README's performance table cites only figures the results folder holds.

Each row names a machine and a day; every number of its figure cell must be
the value of a figure in `evidence/sessions/*/figures.csv` of a session on that
machine (its session.json's description) and day, at the cell's precision.
"""

import csv
import json
import os
import re

import pytest

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SESSIONS = os.path.join(REPO, 'evidence', 'sessions')
START = '<!-- --8<-- [start:performance-table] -->'
END = '<!-- --8<-- [end:performance-table] -->'
# 8,805 or 0.503 or 24.8: thousands separated by commas, a decimal point.
NUMBER = re.compile(r'\d{1,3}(?:,\d{3})+(?:\.\d+)?|\d+(?:\.\d+)?')


def numbers(text):
  """Return the numbers of a text as (value, decimals) pairs."""
  out = []
  for token in NUMBER.findall(text):
    token = token.replace(',', '')
    out.append((float(token), len(token.split('.')[1]) if '.' in token
                else 0))
  return out


def figure_values(machine, day):
  """Return the numbers of every figure of the sessions on machine and day."""
  values = []
  for session in sorted(os.listdir(SESSIONS)):
    folder = os.path.join(SESSIONS, session)
    with open(os.path.join(folder, 'session.json')) as f:
      meta = json.load(f)
    figures = os.path.join(folder, 'figures.csv')
    if (meta['machine']['description'] != machine or meta['date_utc'] != day
        or not os.path.exists(figures)):
      continue
    with open(figures, newline='') as f:
      values += [v for row in csv.DictReader(f) for v, _ in
                 numbers(row['value'])]
  return values


def table_rows():
  """Return (figure cell, machine, day) of each row of the README's table."""
  with open(os.path.join(REPO, 'README.md'), encoding='utf-8') as f:
    text = f.read()
  table = text[text.index(START) + len(START):text.index(END)]
  rows = [[c.strip() for c in line.strip().strip('|').split('|')]
          for line in table.strip().splitlines()[2:]]
  return [(figure, machine, day) for _, figure, machine, day in rows]


def test_numbers_are_read_with_their_precision():
  assert numbers('8,805, 7,604–8,504 frames/s') == [
      (8805.0, 0), (7604.0, 0), (8504.0, 0)]
  assert numbers('0.503 ms / 0.858 ms') == [(0.503, 3), (0.858, 3)]


@pytest.mark.parametrize('figure, machine, day', table_rows())
def test_every_figure_of_the_readme_is_a_committed_one(figure, machine, day):
  values = figure_values(machine, day)
  assert values, (f'No figures.csv of a session on {machine!r}, {day}: name '
                  'the machine and day as its session.json does.')
  for value, decimals in numbers(figure):
    assert any(round(v, decimals) == value for v in values), (
        f'{value} ({figure!r}, {machine}, {day}) is no figure of the results '
        'folder: cite the committed figures.csv values.')
