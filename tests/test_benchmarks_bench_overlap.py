"""Tests for scripts.benchmarks.bench_overlap's parsing, block sizes and table
row (the benchmark itself prints measured numbers and is not a test)."""

import pytest

from scripts.benchmarks import bench_overlap


def test_num_envs_list_parses_and_refuses_bad_items():
  assert bench_overlap.parse_num_envs('16,64') == [16, 64]
  for text in ('16,x', '0', ''):
    with pytest.raises(ValueError, match='positive stream counts'):
      bench_overlap.parse_num_envs(text)


def test_a_block_holds_whole_learn_periods():
  assert bench_overlap.block_updates(16, 4, 16) == 4
  assert bench_overlap.block_updates(64, 4, 16) == 16
  with pytest.raises(ValueError, match='K = 6.*not a whole number'):
    bench_overlap.block_updates(6, 4, 16)


def test_row_compares_with_the_larger_of_stepping_and_learning():
  row = bench_overlap.row({'stepping': [10.0, 12.0, 11.0],
                           'learning': [20.0, 19.0, 21.0],
                           'serial': [30.0, 31.0, 29.0],
                           'overlapped': [22.0, 23.0, 21.0]}, 64)
  assert row['overlapped / max'] == '1.10'
  assert row['serial / max'] == '1.50'
  assert row['overlapped frames/s'] == f'{64e3 / 22:.0f}'
  assert list(row) == list(bench_overlap.COLUMNS)
