"""Tests for scripts.analysis.tables."""

import pytest

from scripts.analysis import tables


def test_markdown_header_rule_and_rows():
  assert tables.markdown(['game', 'score'], [['pong', 1.5], ('breakout', 2)],
                         align='lr') == ['| game | score |', '|---|---:|',
                                         '| pong | 1.5 |', '| breakout | 2 |']
  assert tables.markdown(['a'], []) == ['| a |', '|---|']


def test_markdown_refuses_rows_and_alignments_that_do_not_fit():
  with pytest.raises(ValueError, match='2 cells; the header has 1'):
    tables.markdown(['a'], [[1, 2]])
  with pytest.raises(ValueError, match='one l or r per column'):
    tables.markdown(['a'], [], align='lr')
  with pytest.raises(ValueError, match='one l or r per column'):
    tables.markdown(['a'], [], align='c')
