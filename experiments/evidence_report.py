"""The generated page of the results folder: docs/evidence.md.

Lists the sessions (machine, date, command), the benchmark tables measured,
what is not measured yet, and the plan's progress with each completed piece's
final returns. Written by `python -m experiments.evidence --report` and after
every `--ingest`; tests/test_experiments_evidence_report.py keeps the page in
step with the folder.
"""

import csv
import os
import statistics
from typing import Any, Dict, List, Sequence

from experiments import evidence_bench
from experiments import evidence_plan
from experiments import evidence_store

# What each benchmark measures, for the list of what is not measured yet.
BENCHMARK_TITLES = {
    'jitted_minatar': 'the jitted MinAtar loop\'s steps/s per seed and in '
                      'total at 1, 16, 64 and 256 seeds (CR-DQN, N = 201) '
                      'beside the Python loop (`bench_jitted_minatar`)',
    'agent': 'training frames/s on Breakout of the reference mode and the '
             'fast modes (' + ', '.join(evidence_bench.AGENT_MODES[1:]) +
             '), with the update, acting and environment times '
             '(`bench_agent`)',
    'losses': 'the Cramér loss against the QR loss at N = 201 '
              '(`bench_losses`)',
}


def _final_returns(session_dir: str, run: Dict[str, Any]) -> List[float]:
  out = []
  for path in run.get('csvs', ()):
    with open(os.path.join(session_dir, path), newline='') as f:
      rows = list(csv.DictReader(f))
    if rows:
      out.append(float(rows[-1]['eval_episode_return']))
  return out


def _machine(session: Dict[str, Any]) -> str:
  m = session.get('machine', {})
  return (f'{m.get("device_kind", "?")} ({m.get("platform", "?")}), '
          f'{m.get("cpu_count", "?")} CPUs')


def render(evidence_dir: str, plan: Sequence[evidence_plan.Piece]) -> str:
  """Return the page's markdown for the folder's sessions and the plan."""
  sessions = evidence_store.load_sessions(evidence_dir)
  lines = [
      '# Evidence from the GPU quarter-hours', '',
      'Generated from the results folder `evidence/` by `python -m '
      'experiments.evidence --report` (and after every `--ingest`); do not '
      'edit by hand. How a quarter-hour is spent: '
      '[Performance](performance.md#the-evidence-command).', '',
      '## Sessions', '']
  if sessions:
    lines += ['| session | date | machine | jax | scale | code | status | '
              'command |', '|---|---|---|---|---|---|---|---|']
    for s in sessions:
      lines.append(
          f'| {s["id"]} | {s.get("date_utc", "?")} | {_machine(s)} | '
          f'{s.get("machine", {}).get("jax", "?")} | {s.get("scale")} | '
          f'{s.get("code_version")} | {s.get("status")} | '
          f'`{s.get("command", "")}` |')
  else:
    lines.append('None yet: no GPU quarter-hour has been spent with the '
                 'evidence command.')
  lines += ['', '## Benchmarks', '']
  measured_on_gpu = set()
  any_tables = False
  for s in sessions:
    path = os.path.join(s['dir'], 'benchmarks.md')
    if not os.path.isfile(path):
      continue
    any_tables = True
    for b in s.get('benchmarks', ()):
      if b.get('status') == 'ok' and s.get('machine', {}).get(
          'platform') == 'gpu' and s.get('scale') == 'full':
        measured_on_gpu.add(b['name'])
    with open(path) as f:
      body = f.read().strip().splitlines()
    lines.append(f'### {s["id"]}')
    lines.append('')
    lines += ['##' + l if l.startswith('#') else l for l in body[1:]]
    lines.append('')
  if not any_tables:
    lines += ['No benchmark measured yet.', '']
  lines += ['### Not measured on a GPU yet', '']
  missing = [n for n in BENCHMARK_TITLES if n not in measured_on_gpu]
  lines += ([f'- {BENCHMARK_TITLES[n]}' for n in missing] or
            ['Every benchmark of the evidence command has a GPU figure.'])
  done = evidence_store.done_pieces(sessions)
  by_id = {s['id']: s for s in sessions}
  lines += ['', '## The plan', '',
            f'MinAtar runs: {evidence_plan.RUN_LENGTH_STEPS:,} steps per '
            f'seed ({evidence_plan.MINATAR_ITERATIONS} iterations of '
            f'{evidence_plan.MINATAR_TRAIN_STEPS:,} training steps, '
            f'{evidence_plan.MINATAR_EVAL_STEPS:,} evaluation steps each, ε '
            f'over the first {evidence_plan.EPSILON_DECAY_STEPS:,}), '
            f'{len(evidence_plan.MINATAR_SEEDS)} seeds vmapped per preset, '
            'the jitted loop; why this length: `experiments/evidence_plan.py`. '
            f'Atari: CR-DQN, the fastest measured mode, as many iterations '
            'of 1M frames as fit, judged by `analysis.compare_published`.', '',
            f'{len(done)} of {len(plan)} pieces done.', '',
            '| # | piece | status | final return, mean over seeds (seeds, '
            'iterations) |', '|---:|---|---|---|']
  for number, piece in enumerate(plan, 1):
    where = done.get(piece.id)
    if not where:
      lines.append(f'| {number} | {piece.title} | not yet | |')
      continue
    session = by_id[where]
    record = next(p for p in session['pieces'] if p['id'] == piece.id)
    results = []
    for run in record['runs']:
      returns = _final_returns(session['dir'], run)
      mean = f'{statistics.mean(returns):.2f}' if returns else '?'
      results.append(f'{run["label"]} {mean} ({len(returns)}, '
                     f'{run.get("iterations_done")})')
    lines.append(f'| {number} | {piece.title} | {where} | '
                 f'{"; ".join(results)} |')
  return '\n'.join(lines) + '\n'


def write(evidence_dir: str, path: str,
          plan: Sequence[evidence_plan.Piece] = ()) -> None:
  """Write the page (plan: the registry's unless given)."""
  text = render(evidence_dir, plan or evidence_plan.registry_plan())
  with open(path, 'w') as f:
    f.write(text)
