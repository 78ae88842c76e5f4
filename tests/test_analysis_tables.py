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
