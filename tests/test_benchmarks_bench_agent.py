"""Tests for scripts.benchmarks.bench_agent's mode parsing and figures (the
benchmark itself prints measured numbers and is not a test)."""

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


def test_figures_hold_the_tables_cells_and_the_speed_up():
  rows = {'reference K=1': {'frames/s': '190', 'updates/s': '11.9',
                            'update ms': '58.0', 'update share': '69%',
                            'act ms/frame': '0.300', 'env ms/frame': '0.600',
                            'sample ms': '0.25', 'memory added GB': '0.40'},
          'vector K=16 device replay': {
              'frames/s': '380', 'updates/s': '23.8', 'update ms': '30.0',
              'update share': '71%', 'act ms/frame': '0.020',
              'env ms/frame': '0.300', 'sample ms': '-',
              'memory added GB': '0.80'}}
  assert set(bench_agent.FIGURE_KEYS) == set(rows['reference K=1'])
  figures = {f['key']: f for f in bench_agent.figures(
      rows, 'atari pong, agent cr_dqn', 'vector K=16 device replay', '2.00')}
  assert figures['training.bench_agent.frames_per_s:reference_K=1'][
      'value'] == '190'
  share = figures['training.bench_agent.update_share:vector_K=16_device_replay']
  assert (share['value'], share['unit']) == ('71', '%')
  # The device replay samples no host batch: no figure rather than '-'.
  assert 'training.bench_agent.sample_ms:vector_K=16_device_replay' not in (
      figures)
  assert len(figures) == 8 + 7 + 1
  assert figures['training.bench_agent.speedup']['value'] == '2.00'
  assert 'vector K=16 device replay' in figures['training.bench_agent.speedup'][
      'what']
