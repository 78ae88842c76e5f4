"""Tests for scripts.benchmarks.bench_agent's mode parsing (the benchmark itself prints
measured numbers and is not a test)."""

import pytest

from scripts.benchmarks import bench_agent


def test_modes_parse_with_reference_first():
  Mode = bench_agent.Mode
  modes = bench_agent.parse_modes(
      'reference:1,vector:4, vector:16,vector:16:u4,vector:8:device,'
      'vector:16:u8:device')
  assert modes == [
      Mode('reference', 1), Mode('vector', 4), Mode('vector', 16),
      Mode('vector', 16, 4), Mode('vector', 8, 1, True),
      Mode('vector', 16, 8, True)]
  assert [m.name for m in modes[3:]] == [
      'vector K=16 U=4', 'vector K=8 device replay',
      'vector K=16 U=8 device replay']


@pytest.mark.parametrize('text,message', [
    ('reference:1,gpu:4', "Bad mode 'gpu:4'"),
    ('reference:1,vector:0', "Bad mode 'vector:0'"),
    ('reference:1,vector', "Bad mode 'vector'"),
    ('reference:1,vector:4:u0', "Bad mode 'vector:4:u0'"),
    ('reference:1,vector:4:u2:u4', "Bad mode 'vector:4:u2:u4'"),
    ('reference:1,vector:4:host', "Bad mode 'vector:4:host'"),
    ('vector:16,reference:1', 'The first mode must be reference:1'),
    ('reference:1:u4,vector:16', 'The first mode must be reference:1'),
])
def test_bad_modes_are_refused(text, message):
  with pytest.raises(ValueError, match=message):
    bench_agent.parse_modes(text)
