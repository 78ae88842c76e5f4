"""The benchmarks a session measures, as the commands of scripts/benchmarks/, and
what the evidence command reads back from their output.

Each benchmark runs its own command line (`python -m scripts.benchmarks.bench_...`)
with bounded sizes; its whole output is kept (benchmarks/<name>.txt of the
session) and the figures the plan's estimates need are parsed from it.
"""

import dataclasses
import json
import re
from typing import Any, Dict, List, Optional, Tuple

# The modes of the agent benchmark: the reference, then the fast modes.
AGENT_MODES = ('reference:1', 'vector:64', 'vector:64:u4', 'vector:64:u8',
               'vector:64:u8:device', 'vector:128:u8:device')
REHEARSAL_AGENT_MODES = ('reference:1', 'vector:2:u2:device')
JITTED_SEEDS = (1, 16, 64, 256)
# The stream counts of the Atari loops benchmark on a GPU.
OVERLAP_NUM_ENVS = (16, 64, 128, 256)
# The GPU-only measurements of the campaign page: they run Atari runs.
GPU_ADDED = '2026-11-27'
RUN_MODULES = ('cr_dqn.run_atari',)
FIGURES_PREFIX = 'figures: '   # The JSON line of the GPU benchmarks.


def _gpu_benchmarks(sizes: Tuple[str, ...], memory_s: float,
                    sharing_s: float, loops: Tuple[str, ...],
                    loops_s: float) -> List['Benchmark']:
  """A run's GPU memory with and without preallocation; two runs sharing a
  GPU (the campaign page's GPU memory and sharing); Atari's loops side by
  side at K streams (the Python loop's orders, the jitted loop), last of the
  three so that a first short run still measures the other two."""
  return [
      Benchmark('gpu_memory', ('scripts.benchmarks.bench_gpu_memory',) + sizes,
                memory_s, added=GPU_ADDED, gpu_only=True,
                children=RUN_MODULES),
      Benchmark('gpu_sharing', ('scripts.benchmarks.bench_gpu_sharing',) +
                sizes, sharing_s, added=GPU_ADDED, gpu_only=True,
                children=RUN_MODULES),
      Benchmark('overlap', ('scripts.benchmarks.bench_overlap',
                            '--environment_name=breakout') + loops, loops_s,
                added=GPU_ADDED, gpu_only=True),
  ]


@dataclasses.dataclass(frozen=True)
class Benchmark:
  name: str
  argv: Tuple[str, ...]          # After `python -m`.
  default_seconds: float         # Estimate when no session measured it.
  modes: Tuple[str, ...] = ()    # bench_agent: its --modes, in order.
  # When it joined the list (newest unmeasured first); ISO date.
  added: str = '2026-11-26'
  gpu_only: bool = False         # Skipped, with the reason, elsewhere.
  children: Tuple[str, ...] = () # Modules it runs in child processes.

  @property
  def sources(self) -> Tuple[str, ...]:
    """The modules whose code (and imports) the figure depends on."""
    return (self.argv[0],) + self.children


def benchmarks(scale: str) -> List[Benchmark]:
  """Return the benchmarks of a scale ('full' or 'rehearsal'), in order."""
  if scale == 'rehearsal':
    tiny = ('--replay_capacity=1000', '--num_quantiles=11', '--hidden_size=16')
    return [
        Benchmark('jitted_minatar',
                  ('scripts.benchmarks.bench_jitted_minatar', '--configs=CR-DQN',
                   '--num_seeds=1,2', '--num_steps=200', '--repeats=1') + tiny,
                  120),
        Benchmark('agent',
                  ('scripts.benchmarks.bench_agent', '--environment_name=breakout',
                   '--modes=' + ','.join(REHEARSAL_AGENT_MODES),
                   '--num_frames=256', '--repeats=1',
                   '--bench_replay_capacity=2000', '--min_replay=100'),
                  180, REHEARSAL_AGENT_MODES),
        Benchmark('losses', ('scripts.benchmarks.bench_losses', '--sizes=8',
                             '--repeats=3', '--nosorts'), 60),
    ] + _gpu_benchmarks(('--num_train_frames=8192', '--num_eval_frames=512',
                         '--replay_capacity=2048'), 120, 150,
                        ('--num_envs_list=4', '--num_blocks=2', '--repeats=1',
                         '--timing_repeats=1', '--bench_replay_capacity=400',
                         '--min_replay=40') + tiny[1:] + ('--batch_size=8',),
                        150)
  return [
      # CR-DQN, N = 201, at 1, 16, 64 and 256 vmapped seeds beside the
      # Python loop (Breakout).
      Benchmark('jitted_minatar',
                ('scripts.benchmarks.bench_jitted_minatar', '--configs=CR-DQN',
                 '--num_seeds=' + ','.join(map(str, JITTED_SEEDS)),
                 '--num_steps=1000', '--repeats=2'), 150),
      # Training frames/s of the reference mode and the fast modes on the
      # plan's Atari game, with the update, acting and environment times.
      Benchmark('agent',
                ('scripts.benchmarks.bench_agent', '--environment_name=breakout',
                 '--modes=' + ','.join(AGENT_MODES), '--num_frames=16384',
                 '--repeats=2'), 150, AGENT_MODES),
      # The Cramér loss against the QR loss at N = 201.
      Benchmark('losses', ('scripts.benchmarks.bench_losses', '--sizes=201',
                           '--repeats=30', '--nosorts'), 45),
      # Each: Pong, --num_envs=64, 100k training frames, the replay full;
      # two runs (memory) or three (sharing: one alone, two together).
      # Then Breakout's loops at 16 to 256 streams, the suite's network:
      # per K, four agents warmed up and two programs compiled (the fused
      # updates, the jitted loop), then 3 rounds of 16 blocks each.
  ] + _gpu_benchmarks(('--num_train_frames=100000',), 180, 210,
                      ('--num_envs_list=' + ','.join(map(str, OVERLAP_NUM_ENVS)),
                       '--num_blocks=16', '--repeats=3'), 480)


def _table_rows(text: str) -> List[List[str]]:
  rows = []
  for line in text.splitlines():
    line = line.strip()
    if line.startswith('|') and line.endswith('|') and '---' not in line:
      rows.append([c.strip() for c in line[1:-1].split('|')])
  return rows


def _number(text: str) -> Optional[float]:
  try:
    return float(text.replace(',', ''))
  except ValueError:
    return None


def parse_jitted_minatar(text: str) -> Dict[str, Any]:
  """Return per-seed steps/s by seeds, the Python loop's, warm-up seconds."""
  rates, python = {}, None
  for row in _table_rows(text):
    if len(row) >= 4 and row[1] == 'jitted' and row[2].isdigit():
      rate = _number(row[3])
      if rate is not None:
        rates[row[2]] = rate
    elif len(row) >= 4 and row[1] == 'python':
      python = _number(row[3])
  warmup = {m.group(1): float(m.group(2)) for m in re.finditer(
      r'jitted x(\d+): warmed up .*? in ([0-9.]+) s', text)}
  return {'steps_per_s_per_seed': rates, 'python_steps_per_s': python,
          'warmup_s': warmup}


def parse_agent(text: str, modes: Tuple[str, ...]) -> Dict[str, Any]:
  """Return training frames/s by mode ('vector:64:u8'...) and the best."""
  rows = [r for r in _table_rows(text) if r and r[0] != 'mode' and
          not r[0].startswith('DQN Zoo')]
  fps = {}
  for mode, row in zip(modes, rows):
    value = _number(row[1]) if len(row) > 1 else None
    if value is not None:
      fps[mode] = value
  best = max(fps, key=fps.get) if fps else None
  return {'frames_per_s': fps, 'best_mode': best}


def parse_figure_rows(text: str) -> Dict[str, Any]:
  """Return {'rows': [{key, what, value, unit}]} of the last `figures:` line
  (the GPU benchmarks'); empty rows if none or damaged."""
  rows = []
  for line in text.splitlines():
    if line.startswith(FIGURES_PREFIX):
      try:
        rows = [r for r in json.loads(line[len(FIGURES_PREFIX):])
                if isinstance(r, dict) and {'key', 'value'} <= set(r)]
      except ValueError:
        rows = []
  return {'rows': rows}


def parse(benchmark: Benchmark, text: str) -> Dict[str, Any]:
  """Return the figures the estimates and pages use (empty for the loss
  benchmark)."""
  if benchmark.name == 'jitted_minatar':
    return parse_jitted_minatar(text)
  if benchmark.name == 'agent':
    return parse_agent(text, benchmark.modes)
  if benchmark.gpu_only:
    return parse_figure_rows(text)
  return {}


# Lines kept beside the markdown tables: the summaries, the device, and the
# loss benchmark's fixed-width rows.
_SUMMARY_LINES = ('best mode:', 'speed-up:', 'JAX device:', 'jax ', 'N = M',
                  'variant', 'cramer', 'quantile_regression', 'rlax')


def tables(text: str) -> str:
  """Return the table lines and the summary lines of an output, as markdown
  (the other kept lines fenced as code)."""
  blocks: List[Tuple[bool, List[str]]] = []
  for line in text.splitlines():
    s = line.strip()
    is_table = s.startswith('|')
    if not (is_table or s.startswith(_SUMMARY_LINES)):
      continue
    if not blocks or blocks[-1][0] != is_table:
      blocks.append((is_table, []))
    blocks[-1][1].append(line.rstrip() if not is_table else s)
  out = []
  for is_table, lines in blocks:
    out.append('\n'.join(lines) if is_table else
               '```\n' + '\n'.join(lines) + '\n```')
  return '\n\n'.join(out)
