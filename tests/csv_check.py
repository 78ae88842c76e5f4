"""Read a CSV the project wrote and check that it parses back to its header."""

import csv
import io
from typing import Dict, List


def read_back(text: str) -> List[Dict[str, str]]:
  """Return the rows of CSV `text`; fail if a row's fields differ from the header's."""
  reader = csv.DictReader(io.StringIO(text, newline=''))
  rows = list(reader)
  assert reader.fieldnames, 'no header'
  for number, row in enumerate(rows, start=2):
    # DictReader files extra fields under None and fills missing ones with None.
    assert None not in row, f'line {number} has more fields than the header'
    assert None not in row.values(), (
        f'line {number} has fewer fields than the header')
  return rows


def read_back_file(path: str) -> List[Dict[str, str]]:
  """read_back of the file at `path`."""
  with open(path, newline='') as f:
    return read_back(f.read())
