"""Tests for scripts.analysis.tables."""

import pytest

from scripts.analysis import tables


def test_markdown_header_rule_and_rows_and_what_does_not_fit():
  assert tables.markdown(['game', 'score'], [['pong', 1.5], ('breakout', 2)],
                         align='lr') == ['| game | score |', '|---|---:|',
                                         '| pong | 1.5 |', '| breakout | 2 |']
  with pytest.raises(ValueError, match='2 cells; the header has 1'):
    tables.markdown(['a'], [[1, 2]])
  with pytest.raises(ValueError, match='one l or r per column'):
    tables.markdown(['a'], [], align='c')


def test_number_has_six_digits_and_nan_is_blank():
  assert tables.number(2 / 3) == '0.666667'
  assert tables.number(float('nan')) == ''
