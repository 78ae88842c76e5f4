"""The pages generated from the results folder (evidence/).

docs/evidence.md whole: the sessions (machine, date, command), the benchmark
tables and recorded figures, what the evidence command has not measured yet,
and the plan's progress with each completed piece's final returns. And the
sections between marker comments (`<!-- --8<-- [start:NAME] -->`) of other
pages (PAGE_SECTIONS): the README's performance and MinAtar tables, the
MinAtar and Atari result pages' tables of our runs, the performance page's
list of what is not yet measured, and the campaign page's GPU memory and GPU
sharing. Written by `python -m
scripts.experiments.evidence --report` and after every `--ingest`;
tests/test_experiments_evidence_report.py keeps the pages in step with the
folder.
"""

import csv
import glob
import os
import re
import statistics
from typing import Any, Dict, List, Optional, Sequence, Tuple

from scripts.experiments import evidence_bench
from scripts.experiments import evidence_plan
from scripts.experiments import evidence_store

# The repository root: scripts/experiments/evidence_report.py is three down.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

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
    'gpu_memory': 'a run\'s GPU memory with and without JAX\'s '
                  'preallocation (Atari, `--num_envs=64`, the replay full; '
                  '`bench_gpu_memory`)',
    'gpu_sharing': 'two runs sharing one GPU under the sweep\'s sharing '
                   'settings: whether both fit, their training rates '
                   '(`bench_gpu_sharing`)',
    'overlap': 'Atari training frames/s on Breakout at 16, 64, 128 and 256 '
               'streams: the Python loop serial and with '
               '`--overlap_learning`, stepping and learning alone, and the '
               'jitted loop, with its speed over the faster Python order '
               '(`bench_overlap`)',
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
  if m.get('description'):
    return m['description']
  return (f'{m.get("device_kind", "?")} ({m.get("platform", "?")}), '
          f'{m.get("cpu_count", "?")} CPUs')


_MODULE = re.compile(r'python -m ([A-Za-z_][A-Za-z0-9_.]*)')
# Where the recorded modules' packages live today, by their old top package.
MOVED_PACKAGES = {'benchmarks': 'scripts.benchmarks',
                  'experiments': 'scripts.experiments',
                  'analysis': 'scripts.analysis'}


def _module_exists(root: str, module: str) -> bool:
  path = os.path.join(root, *module.split('.'))
  return os.path.isfile(path + '.py') or os.path.isfile(
      os.path.join(path, '__main__.py'))


def renamed_modules(sessions: Sequence[Dict[str, Any]], root: str = ROOT
                    ) -> Tuple[int, List[Tuple[str, str]]]:
  """Return how many recorded commands (a session's, a figure's) name a
  module that no longer exists, and (old name, today's name) of each such
  module, sorted; today's name is '(gone)' when it has none."""
  count, names = 0, {}
  for session in sessions:
    commands = [session.get('command', '')]
    commands += [f.get('command', '') for f in _recorded_figures(session)]
    for command in commands:
      missing = [m for m in _MODULE.findall(command)
                 if not _module_exists(root, m)]
      count += bool(missing)
      for module in missing:
        top, _, rest = module.partition('.')
        new = f'{MOVED_PACKAGES[top]}.{rest}' if top in MOVED_PACKAGES else ''
        names[module] = new if new and _module_exists(root, new) else '(gone)'
  return count, sorted(names.items())


def _recorded_figures(session: Dict[str, Any]) -> List[Dict[str, str]]:
  path = os.path.join(session.get('dir', ''), evidence_store.FIGURES_FILE)
  if not os.path.isfile(path):
    return []
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


def render(evidence_dir: str, plan: Sequence[evidence_plan.Piece]) -> str:
  """Return the page's markdown for the folder's sessions and the plan."""
  sessions = evidence_store.load_sessions(evidence_dir)
  lines = [
      '# Evidence from the GPU', '',
      'Generated from the results folder `evidence/` by `python -m '
      'scripts.experiments.evidence --report` (and after every `--ingest`); do '
      'not edit by hand. How to spend a short GPU allocation with the '
      'evidence command: [Performance](performance.md#the-evidence-command).',
      '',
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
    if any(s.get('scale') == 'recorded' for s in sessions):
      lines += ['', 'Sessions of scale `recorded` hold what was measured '
                'before the evidence command existed, with the machine, date '
                'and command as they were recorded (figures.csv; "not '
                'recorded" where they were not).']
    renamed = renamed_modules(sessions)
    if renamed[0]:
      lines += ['', f'{renamed[0]} recorded commands name modules that no '
                'longer exist: the scripts have moved under `scripts/` since. '
                'Today\'s names: ' + '; '.join(
                    f'`{old}` is `{new}`' for old, new in renamed[1]) + '.']
  else:
    lines.append('None yet: the evidence command has not been run on a GPU.')
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
  for s in sessions:
    recorded = evidence_store.figures(s) if s.get('scale') == 'recorded' else []
    if not recorded:
      continue
    any_tables = True
    lines += [f'### {s["id"]}: figures recorded by hand', '',
              f'{_machine(s)}, {s.get("date_utc", "?")}; code: '
              f'{s.get("code_version", "?")}. From `{s["id"]}/figures.csv`.',
              '', '| what | figure | command | note |', '|---|---:|---|---|']
    lines += [f'| {f["what"]} | {_value(f)} | {f["command"]} | {f["note"]} |'
              for f in recorded]
    lines.append('')
  if not any_tables:
    lines += ['No benchmark measured yet.', '']
  lines += ['### Not yet measured on a GPU by the evidence command', '']
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
            'the jitted loop; why this length: `scripts/experiments/evidence_plan.py`. '
            f'Atari: CR-DQN, the fastest measured mode, as many iterations '
            'of 1M frames as fit, judged by `scripts.analysis.compare_published`.', '',
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


# --- Sections of other pages, between marker comments -----------------------

def _value(figure: Dict[str, str]) -> str:
  return f'{figure["value"]} {figure["unit"]}'.strip()


def _number(text: str) -> Optional[float]:
  try:
    return float(text.replace(',', '').lstrip('≈'))
  except ValueError:
    return None


def _values(figures: Sequence[Dict[str, str]]) -> str:
  """One session's figures of a key: one value, or the range of several."""
  values = list(dict.fromkeys(f['value'] for f in figures))
  numbers = [_number(v) for v in values]
  if len(values) > 1 and None not in numbers:
    low = values[numbers.index(min(numbers))]
    high = values[numbers.index(max(numbers))]
    values = [f'{low}–{high}']
  return f'{", ".join(values)} {figures[0]["unit"]}'.strip()


# The README's performance table: (title, keys); one row per session that has
# a figure of the keys (several keys: their values joined by ' / '). Rows
# without any figure are left out (docs/performance.md lists them).
README_ROWS = (
    ('Atari training, one stream (the reference mode), CR-DQN '
     '(`bench_agent`)', ('atari.bench_agent.reference:1',)),
    ('Atari training, 16 vectorized streams (`bench_agent`)',
     ('atari.bench_agent.vector:16',)),
    ('Atari training, 64 vectorized streams (`bench_agent`)',
     ('atari.bench_agent.vector:64',)),
    ('Atari training, 64 streams, 8 fused updates, the replay on the device '
     '(`bench_agent`)', ('atari.bench_agent.vector:64:u8:device',)),
    ('Atari training in a run, 64 streams (`run_atari --num_envs=64`, '
     'Pong and Breakout, at most 2M frames)', ('atari.run_atari.vector:64',)),
    ('DeepMind DQN Zoo\'s QR-DQN, same machine', ('atari.dqn_zoo_qr_dqn',)),
    ('Cramér loss (sorted form) / rlax QR loss, N = 201, value and gradient, '
     'batch 32 (`bench_losses`)',
     ('losses.n201.cramer_sorted', 'losses.n201.rlax_qr')),
    ('MinAtar training, Python loop, CR-DQN (`bench_minatar`)',
     ('minatar.bench_minatar.CR-DQN',)),
    ('MinAtar training, jitted loop, 256 vmapped seeds, CR-DQN '
     '(`bench_jitted_minatar`)', ('minatar.jitted.x256',)),
)


def _result_sessions(evidence_dir: str) -> List[Dict[str, Any]]:
  return [s for s in evidence_store.load_sessions(evidence_dir)
          if s.get('scale') in evidence_store.RESULT_SCALES]


def performance_table(sessions: Sequence[Dict[str, Any]]) -> str:
  """The README's table: each figure that exists, with its machine and day."""
  lines = ['| what | figure | machine | day |', '|---|---:|---|---|']
  for title, keys in README_ROWS:
    shown = title
    for s in sessions:
      figures = evidence_store.figures(s)
      by_key = [[f for f in figures if f['key'] == k] for k in keys]
      if not all(by_key):
        continue
      value = ' / '.join(_values(f) for f in by_key)
      lines.append(f'| {shown} | {value} | {_machine(s)} | '
                   f'{s.get("date_utc", "?")} |')
      shown = ''
  return '\n'.join(lines)


# What is not yet measured, for docs/performance.md: (what, whether a GPU
# figure of a result session shows it measured, by its key).
NOT_MEASURED = (
    ('the fused updates (`--num_fused_updates`) on a GPU: `bench_agent` '
     'modes `vector:64:u4`, `vector:64:u8`',
     lambda key: re.match(r'atari\.bench_agent\..*:u\d', key) is not None),
    ('the replay on the device (`--replay_on_device`) on a GPU: `bench_agent` '
     'modes `vector:64:u8:device`, `vector:128:u8:device`',
     lambda key: key.startswith('atari.bench_agent.') and
     key.endswith(':device')),
    ('the jitted MinAtar loop on a GPU: steps/s per seed and in total at 1, '
     '16, 64 and 256 vmapped seeds (`bench_jitted_minatar`)',
     lambda key: key.startswith('minatar.jitted.')),
    ('the jitted Atari loop on a GPU: training frames/s at 16, 64, 128 and '
     '256 streams beside the Python loop\'s serial and overlapped orders, '
     'and its speed over the faster (`bench_overlap`)',
     lambda key: key.startswith('atari.bench_overlap.jitted:')),
    ('the Cramér loss on a GPU between N = 201 and N = 4000 (where `form='
     '\'auto\'` switches form, at N·M = 512², is an estimate)',
     lambda key: re.match(r'losses\.n(\d+)\.', key) is not None and
     201 < int(re.match(r'losses\.n(\d+)\.', key).group(1)) < 4000),
)


def _atari_runs(sessions: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
  return [r for r in _runs(sessions) if not r['minatar']]


def not_measured(sessions: Sequence[Dict[str, Any]],
                 plan: Sequence[evidence_plan.Piece]) -> str:
  """The list of what is not yet measured (a markdown list)."""
  gpu_keys = [f['key'] for s in sessions
              if s.get('machine', {}).get('platform') == 'gpu'
              for f in evidence_store.figures(s)]
  items = [what for what, measured in NOT_MEASURED
           if not any(measured(k) for k in gpu_keys)]
  longest = max((r['last_iteration'] for r in _atari_runs(sessions)),
                default=-1)
  if longest <= 2:
    items.append('an Atari run of ours longer than 2M frames (on the GPU at '
                 '64 streams, the training streams going on across '
                 'iterations included), and so any learning curve of ours '
                 'at the paper\'s scale')
  done = evidence_store.done_pieces(sessions)
  left = [p for p in plan if p.id not in done]
  if left:
    items.append(f'{len(left)} of the evidence plan\'s {len(plan)} pieces, '
                 f'the next: {left[0].title} '
                 '([the plan](evidence.md#the-plan))')
  return '\n'.join(f'- {i}' for i in items) or 'Everything listed is measured.'


def _runs(sessions: Sequence[Dict[str, Any]]) -> List[Dict[str, Any]]:
  """Every run CSV of the result sessions, with its final evaluation."""
  out = []
  for s in sessions:
    pattern = os.path.join(s['dir'], 'runs', '*', '*', '*', '*', 'seed_*',
                           'results.csv')
    for path in sorted(glob.glob(pattern)):
      piece, label, agent, game, seed = os.path.relpath(
          path, os.path.join(s['dir'], 'runs')).split(os.sep)[:5]
      with open(path, newline='') as f:
        rows = list(csv.DictReader(f))
      if not rows:
        continue
      name = rows[-1].get('environment_name') or game
      out.append({'session': s, 'piece': piece, 'label': label,
                  'agent': agent, 'game': name.replace('minatar-', ''),
                  'minatar': name.startswith('minatar-') or
                             piece.startswith('minatar'),
                  'seed': int(seed.split('_')[1]),
                  'last_iteration': int(rows[-1]['iteration']),
                  'frame': float(rows[-1].get('frame') or 'nan'),
                  'final': float(rows[-1]['eval_episode_return'])})
  return out


def _mean_ci(values: Sequence[float]) -> str:
  # Imported here: the evidence command imports this module on the GPU
  # machine, where plotting is not needed.
  from scripts.analysis import minatar_report  # pylint: disable=g-import-not-at-top
  cell = minatar_report.mean_with_ci(values, reps=10_000)
  if cell.num_seeds < 2:
    return f'{cell.mean:.2f}'
  return f'{cell.mean:.2f} [{cell.lower:.2f}, {cell.upper:.2f}]'


def _groups(runs: Sequence[Dict[str, Any]]):
  groups: Dict[Tuple[str, str, str, str], List[Dict[str, Any]]] = {}
  for r in runs:
    groups.setdefault((r['session']['id'], r['piece'], r['game'], r['label']),
                      []).append(r)
  return groups


def minatar_results(sessions: Sequence[Dict[str, Any]]) -> str:
  """The MinAtar page's results: the runs of the folder, then the studies'
  recorded tables (final_scores.csv)."""
  lines = []
  groups = _groups([r for r in _runs(sessions) if r['minatar']])
  if groups:
    lines += ['Runs in the results folder (final evaluation return, mean over '
              'seeds [95% bootstrap CI]):', '',
              '| game | configuration | seeds | iterations | final eval return '
              '| piece | machine | day |', '|---|---|---:|---:|---:|---|---|---|']
    for (_, piece, game, label), runs in sorted(
        groups.items(), key=lambda kv: (kv[0][2], kv[0][0], kv[0][3])):
      s = runs[0]['session']
      lines.append(
          f'| {game} | {label} | {len(runs)} | '
          f'{min(r["last_iteration"] for r in runs)} | '
          f'{_mean_ci([r["final"] for r in runs])} | {piece} | {_machine(s)} '
          f'| {s.get("date_utc", "?")} |')
  for s in sessions:
    path = os.path.join(s['dir'], 'final_scores.csv')
    if not os.path.isfile(path):
      continue
    with open(path, newline='') as f:
      rows = list(csv.DictReader(f))
    if lines:
      lines.append('')
    lines += [f'{_machine(s)}, {s.get("date_utc", "?")} (session `{s["id"]}`, '
              f'{s.get("status", "?")}; code: {s.get("code_version", "?")}):',
              '', '| game | configuration | seeds | final eval return | mean '
              'over iterations | final train return | random policy |',
              '|---|---|---:|---:|---:|---:|---:|']
    for r in rows:
      lines.append(
          f'| {r["game"]} | {r["configuration"]} | {r["seeds"]} | '
          f'{_cell(r, "final")} | {_cell(r, "mean_over_iterations")} | '
          f'{float(r["final_train_mean"]):.2f} | '
          f'{float(r["random_policy"]):.2f} |')
  return '\n'.join(lines) or 'No MinAtar run in the results folder yet.'


def _cell(row: Dict[str, str], name: str) -> str:
  mean, low, high = (row[f'{name}_{k}'] for k in ('mean', 'ci_low', 'ci_high'))
  text = f'{float(mean):.2f}'
  return f'{text} [{float(low):.2f}, {float(high):.2f}]' if low else text


def readme_minatar_table(sessions: Sequence[Dict[str, Any]]) -> str:
  """CR-DQN against QR-DQN-1 on MinAtar: the newest figure of each game from
  the runs of the folder or a study's final_scores.csv, 3 seeds or more."""
  best: Dict[str, Tuple[str, ...]] = {}
  for s in sessions:
    path = os.path.join(s['dir'], 'final_scores.csv')
    if os.path.isfile(path):
      with open(path, newline='') as f:
        rows = {(r['game'], r['configuration']): r for r in csv.DictReader(f)}
      for game in sorted({g for g, _ in rows}):
        cr, qr = rows.get((game, 'CR-DQN')), rows.get((game, 'QR-DQN-1'))
        if cr and qr and min(int(cr['seeds']), int(qr['seeds'])) >= 3:
          best[game] = (_cell(cr, 'final'), _cell(qr, 'final'),
                        f'{float(cr["random_policy"]):.2f}',
                        f'{min(int(cr["seeds"]), int(qr["seeds"]))}',
                        f'{_machine(s)}, {s.get("date_utc", "?")}')
    groups = _groups([r for r in _runs([s]) if r['minatar']])
    for (_, _, game, label), runs in groups.items():
      other = groups.get((s['id'], runs[0]['piece'], game, 'QR-DQN-1'))
      if label == 'CR-DQN' and other and min(len(runs), len(other)) >= 3:
        best[game] = (_mean_ci([r['final'] for r in runs]),
                      _mean_ci([r['final'] for r in other]), '–',
                      f'{min(len(runs), len(other))}',
                      f'{_machine(s)}, {s.get("date_utc", "?")}')
  lines = ['| game | CR-DQN | QR-DQN-1 | random policy | seeds | '
           'machine, day |', '|---|---:|---:|---:|---:|---|']
  lines += [f'| {game.replace("_", " ").title()} | {" | ".join(best[game])} |'
            for game in sorted(best)]
  return '\n'.join(lines)


def atari_runs(sessions: Sequence[Dict[str, Any]]) -> str:
  """The Atari page's runs of ours: those of the folder, judged, then those
  recorded by hand without their CSVs."""
  lines = []
  groups = _groups(_atari_runs(sessions))
  if groups:
    lines += ['| game | agent | seeds | iterations | frames | final eval return '
              '| `compare_published` | machine | day |',
              '|---|---|---:|---:|---:|---:|---|---|---|']
    for (_, piece, game, label), runs in sorted(groups.items()):
      s = runs[0]['session']
      judge = next((p.get('judge') for p in s.get('pieces', ())
                    if p['id'] == piece and p.get('judge')), None)
      lines.append(
          f'| {game} | {label} | {len(runs)} | '
          f'{min(r["last_iteration"] for r in runs)} | '
          f'{min(r["frame"] for r in runs):,.0f} | '
          f'{statistics.mean(r["final"] for r in runs):.2f} | '
          f'{_judged(s, judge)} | {_machine(s)} | {s.get("date_utc", "?")} |')
  else:
    lines.append('No Atari run of ours in the results folder yet.')
  by_hand = [(s, f) for s in sessions for f in evidence_store.figures(s)
             if f['key'].startswith('atari.run_atari.')]
  if by_hand:
    lines += ['', 'Runs recorded by hand, without their CSVs (rates only):', '']
    lines += [f'- {f["what"]}: {_value(f)} ({_machine(s)}, {f["date"]}); '
              f'{f["note"]}' for s, f in by_hand]
  return '\n'.join(lines)


def _judged(session: Dict[str, Any], judge: Optional[str]) -> str:
  """The summary line of compare_published's output, or why there is none."""
  if not judge:
    return 'not judged'
  path = os.path.join(session['dir'], judge)
  if not os.path.isfile(path):
    return f'`{judge}` missing'
  with open(path) as f:
    summary = [l.strip() for l in f if ' compared: ' in l]
  return (summary[-1].split('. ')[0] if summary else 'no summary') + (
      f' (`{session["id"]}/{judge}`)')


# The campaign page's GPU measurements: (key prefix, benchmark, what it is).
GPU_SECTIONS = {
    'gpu-memory': ('gpu.memory.', 'bench_gpu_memory',
                   'one Atari run (Pong, `--num_envs=64`, the replay full) '
                   'with and without JAX\'s preallocation'),
    'gpu-sharing': ('gpu.sharing.', 'bench_gpu_sharing',
                    'one Atari run alone, then two at once on the same GPU '
                    'with the sweep\'s sharing settings (Pong, '
                    '`--num_envs=64`, the replay full)'),
}


def gpu_section(sessions: Sequence[Dict[str, Any]], name: str) -> str:
  """The campaign page's GPU memory or sharing: the figures of the result
  sessions on a GPU, or what will measure them."""
  prefix, module, what = GPU_SECTIONS[name]
  lines = ['| what | figure | machine | day |', '|---|---:|---|---|']
  for s in sessions:
    if s.get('machine', {}).get('platform') != 'gpu':
      continue
    lines += [f'| {f["what"]} | {_value(f)} | {_machine(s)} | '
              f'{s.get("date_utc", "?")} |'
              for f in evidence_store.figures(s) if f['key'].startswith(prefix)]
  command = f'`python -m scripts.benchmarks.{module}`'
  if len(lines) > 2:
    return ('Measured by the evidence command (' + command + ': ' + what +
            '):\n\n' + '\n'.join(lines))
  return ('**Not yet measured** on a GPU. The evidence command measures it on '
          'its first run on a GPU (this and the other GPU measurement of this '
          'page in one run given `--budget_minutes=15` or more), and this '
          'paragraph is then generated from its figures '
          '([Performance](performance.md#the-evidence-command)): ' + command +
          ', ' + what + '.')


# The generated sections of each page (relative to the repository root).
PAGE_SECTIONS = {
    'README.md': ('performance-table', 'minatar-table'),
    'docs/performance.md': ('not-measured',),
    'docs/experiments/minatar.md': ('minatar-results',),
    'docs/experiments/atari57.md': ('atari-runs',),
    'docs/campaign.md': tuple(GPU_SECTIONS),
}


def sections(evidence_dir: str,
             plan: Sequence[evidence_plan.Piece]) -> Dict[str, str]:
  """Return every generated section's markdown, by name."""
  sessions = _result_sessions(evidence_dir)
  return {
      'performance-table': performance_table(sessions),
      'minatar-table': readme_minatar_table(sessions),
      'not-measured': not_measured(sessions, plan),
      'minatar-results': minatar_results(sessions),
      'atari-runs': atari_runs(sessions),
      **{name: gpu_section(sessions, name) for name in GPU_SECTIONS},
  }


def replace_section(text: str, name: str, body: str) -> str:
  """Return text with the lines between name's marker comments replaced."""
  start = f'<!-- --8<-- [start:{name}] -->\n'
  end = f'<!-- --8<-- [end:{name}] -->'
  if text.count(start) != 1 or text.count(end) != 1:
    raise ValueError(f'expected one pair of markers {start.strip()} ... '
                     f'{end}')
  head, rest = text.split(start)
  _, tail = rest.split(end)
  return head + start + body.rstrip('\n') + '\n' + end + tail


def render_pages(root: str, evidence_dir: str,
                 plan: Sequence[evidence_plan.Piece]) -> Dict[str, str]:
  """Return {page path: its text with the generated sections rewritten}."""
  bodies = sections(evidence_dir, plan)
  out = {}
  for page, names in PAGE_SECTIONS.items():
    with open(os.path.join(root, page)) as f:
      text = f.read()
    for name in names:
      text = replace_section(text, name, bodies[name])
    out[page] = text
  return out


def write_pages(root: str, evidence_dir: str,
                plan: Sequence[evidence_plan.Piece] = ()) -> List[str]:
  """Rewrite the generated sections of PAGE_SECTIONS' pages under root;
  return the pages that changed."""
  changed = []
  pages = render_pages(root, evidence_dir,
                       plan or evidence_plan.registry_plan())
  for page, text in pages.items():
    path = os.path.join(root, page)
    with open(path) as f:
      if f.read() == text:
        continue
    with open(path + '.tmp', 'w') as f:
      f.write(text)
    os.replace(path + '.tmp', path)
    changed.append(page)
  return changed
