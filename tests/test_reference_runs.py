"""Tiny seeded runs give the CSVs of tests/data/reference_runs/ (README there).

The code's structure may change; what a run computes must not. Each run is
compiled for one instruction set with XLA's own kernels
(compile_flags.reference_environment()) and pinned to one CPU, so that it
computes the same bits on every x86-64 CPU with AVX2, with any number of
cores (the README there says how this was checked and what still differs).
Compared: every column of the reference but the frame rates, which are
timings, to 1e-5 relative (a change of what a run computes moves a learning
run's values by far more); a run may write columns added after the reference.
"""

import math
import os

import pytest

from tests import csv_check
from tests import reference_runs

TIMINGS = ('eval_frame_rate', 'train_frame_rate')


def _same(expected: str, got: str) -> bool:
  try:
    a, b = float(expected), float(got)
  except ValueError:
    return expected == got
  if math.isnan(a):
    return math.isnan(b)
  return math.isclose(a, b, rel_tol=1e-5, abs_tol=1e-7)


@pytest.mark.end_to_end
@pytest.mark.parametrize('name', sorted(reference_runs.RUNS))
def test_a_tiny_run_gives_the_reference_csv(tmp_path, name):
  path = tmp_path / 'results.csv'
  reference_runs.record(name, str(path), timeout=300)
  expected = csv_check.read_back_file(
      os.path.join(reference_runs.DATA, name + '.csv'))
  got = csv_check.read_back_file(str(path))
  # The reference's columns, in its order; columns added since (the
  # evaluated frames) are the code's and not compared.
  assert [c for c in got[0] if c in expected[0]] == list(expected[0])
  assert len(got) == len(expected)
  for want, row in zip(expected, got):
    for column in want:
      if column not in TIMINGS:
        assert _same(want[column], row[column]), (
            name, want['iteration'], column, want[column], row[column])
