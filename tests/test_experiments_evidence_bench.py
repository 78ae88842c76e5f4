"""Tests for scripts.experiments.evidence_bench: the commands and their parsing."""

from scripts.experiments import evidence_bench as bench

JITTED = """machine: 16 CPUs
JAX device: cuda:0; XLA single-threaded; game breakout
CR-DQN python: warmed up in 3 s
CR-DQN jitted x1: warmed up (compiled, replay past its minimum) in 41 s
CR-DQN jitted x16: warmed up (compiled, replay past its minimum) in 52 s
round 1/2 done

| configuration | loop | seeds | train steps/s per seed | train steps/s total | vs python | memory per seed |
|---|---|---:|---:|---:|---:|---|
| CR-DQN | python | 1 | 900 | 900 | 1.00x | replay 41.6 MB (host, uint8) |
| CR-DQN | jitted | 1 | 2500 | 2500 | 2.78x | replay 6.6 MB + learner 3.4 MB |
| CR-DQN | jitted | 16 | 2000 | 32000 | 35.56x | replay 6.6 MB + learner 3.4 MB |
"""

AGENT = """JAX device: cuda:0; atari breakout; agent cr_dqn
| mode | frames/s | updates/s | update ms |
|---|---|---|---|
| reference K=1 | 1686 | 105 | 1.0 |
| vector K=64 | 7247 | 450 | 1.1 |
| vector K=64 U=8 device replay | 12,000 | 750 | 0.4 |
| DQN Zoo QR-DQN (not rerun; measured before on this 2-core machine) | 189 | | 58 |

best mode: vector K=64 U=8 device replay
speed-up: 7.12
"""


def test_full_benchmarks_cover_what_the_readme_quotes():
  names = {b.name: b for b in bench.benchmarks('full')}
  assert list(names) == ['jitted_minatar', 'agent', 'losses', 'gpu_memory',
                         'gpu_sharing', 'overlap']
  for name in ('gpu_memory', 'gpu_sharing', 'overlap'):
    assert names[name].gpu_only and names[name].added > names['agent'].added
  for name in ('gpu_memory', 'gpu_sharing'):
    assert names[name].sources == (f'scripts.benchmarks.bench_{name}',
                                   'cr_dqn.run_atari')
  # The Atari loops, the jitted loop among them, at the GPU's stream counts.
  assert '--num_envs_list=16,64,128,256' in names['overlap'].argv
  assert '--num_seeds=1,16,64,256' in names['jitted_minatar'].argv
  assert names['agent'].modes[0] == 'reference:1'
  assert '--modes=' + ','.join(bench.AGENT_MODES) in names['agent'].argv
  assert '--sizes=201' in names['losses'].argv
  for b in bench.benchmarks('rehearsal'):
    assert b.argv[0].startswith('scripts.benchmarks.bench_')


def test_parse_jitted_minatar():
  figures = bench.parse(bench.benchmarks('full')[0], JITTED)
  assert figures == {'steps_per_s_per_seed': {'1': 2500.0, '16': 2000.0},
                     'python_steps_per_s': 900.0,
                     'warmup_s': {'1': 41.0, '16': 52.0}}


def test_parse_agent_maps_rows_to_modes_in_order():
  b = bench.Benchmark('agent', (), 1, ('reference:1', 'vector:64',
                                       'vector:64:u8:device'))
  figures = bench.parse(b, AGENT)
  assert figures['frames_per_s'] == {'reference:1': 1686.0,
                                     'vector:64': 7247.0,
                                     'vector:64:u8:device': 12000.0}
  assert figures['best_mode'] == 'vector:64:u8:device'


def test_parse_of_a_broken_output_is_empty():
  assert bench.parse_jitted_minatar('Traceback...')['steps_per_s_per_seed'] == {}
  assert bench.parse_agent('', ('reference:1',))['best_mode'] is None


def test_tables_keep_the_tables_and_summaries():
  text = bench.tables(AGENT + 'noise line\n')
  assert 'noise' not in text
  assert '| vector K=64 | 7247 | 450 | 1.1 |' in text
  assert 'speed-up: 7.12' in text
  # Tables stand apart from the other lines, which are fenced as code.
  assert text.startswith('```\nJAX device: cuda:0')
  assert '```\n\n| mode | frames/s |' in text


def test_parse_of_the_gpu_benchmarks_reads_their_figures_line():
  b = {x.name: x for x in bench.benchmarks('full')}['gpu_memory']
  rows = [{'key': 'gpu.memory.on_demand.peak_in_use', 'what': 'peak',
           'value': '1.20', 'unit': 'GB'}]
  text = 'noise\nfigures: [{"key": "old", "value": "1"}]\nfigures: ' + (
      __import__('json').dumps(rows)) + '\n'
  assert bench.parse(b, text) == {'rows': rows}
  assert bench.parse(b, 'figures: [not json\n') == {'rows': []}
  assert bench.parse(b, 'Traceback') == {'rows': []}
