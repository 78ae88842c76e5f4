"""Tests for scripts.bench_agent's mode parsing (the benchmark itself prints
measured numbers and is not a test)."""

import pytest

from scripts import bench_agent


def test_modes_parse_with_reference_first():
  assert bench_agent.parse_modes('reference:1,vector:4, vector:16') == [
      ('reference', 1), ('vector', 4), ('vector', 16)]


@pytest.mark.parametrize('text,message', [
    ('reference:1,gpu:4', "Bad mode 'gpu:4'"),
    ('reference:1,vector:0', "Bad mode 'vector:0'"),
    ('reference:1,vector', "Bad mode 'vector'"),
    ('vector:16,reference:1', 'The first mode must be reference:1'),
])
def test_bad_modes_are_refused(text, message):
  with pytest.raises(ValueError, match=message):
    bench_agent.parse_modes(text)
