r"""A budgeted run for a short GPU allocation: measure, advance the plan, pack.

For anyone with a GPU for a short while (a spot instance, a short scheduler
slot, a shared workstation for an hour): copy the project there, install it,
run this command with a budget a little under the allocation, copy the one
archive it writes back, and ingest it here.

  python -m scripts.experiments.evidence --budget_minutes=25 --output_dir=out
  python -m scripts.experiments.evidence --ingest=out/evidence-<id>.tar.gz
  python -m scripts.experiments.evidence --report            # the pages only
  python -m scripts.experiments.evidence --dry_run --output_dir=out  # the plan

Within a hard deadline (--budget_minutes, of which the last --pack_reserve_s
are kept for packing), in one process that runs the project's own command
lines:

a. measures the benchmarks of scripts.experiments.evidence_bench that this
   device kind lacks (bench_jitted_minatar at 1, 16, 64 and 256 seeds beside
   the Python loop, bench_agent's reference and fast modes on Breakout,
   bench_losses at N = 201; on a GPU only, bench_gpu_memory, an Atari run's
   GPU memory with and without JAX's preallocation, and bench_gpu_sharing,
   two runs sharing the GPU under the sweep's settings; skipped elsewhere,
   with the reason), with the device, the JAX version and the CPU count. A figure measured on this device kind with the same benchmarked
   code (a hash of the source files the benchmark imports) is not taken
   again; --measure=always|never overrides. The benchmarks get at most
   --measure_share of the budget, and never the time of the first pending
   piece that fits the budget; the never measured go first, the newest in the
   list first; one that does not fit is measured next time;
b. advances the plan (scripts.experiments.evidence_plan) with what is left: the
   pieces not yet in the results folder, in order, each started only if its
   estimated duration (scripts.experiments.evidence_estimate, from speeds
   measured on this device kind) fits what is left; MinAtar pieces side by
   side where the measured speeds say that more seeds in flight raise the
   total rate; an Atari piece takes as many iterations as fit and is judged by
   scripts.analysis.compare_published. Every task's compile time is printed;
   the tasks share one JAX persistent compilation cache (--work_dir/jax-cache),
   so a program compiled once (QR-DQN-1's serves QR-DQN-0: κ is data) loads;
c. packs what it did (session.json, the log, each benchmark's output and
   table, each run's CSV and run.json) into one archive,
   --output_dir/evidence-<id>.tar.gz; also when the deadline comes, on Ctrl-C
   or SIGTERM.

Copy that archive back to your checkout; --ingest unpacks it into the results
folder (--evidence_dir, evidence/) and rewrites docs/evidence.md and the
generated sections of the other pages (scripts.experiments.evidence_report).
--rehearsal runs the same code path at a tiny scale (the plan's first run of
each piece, 2 seeds, seconds per run) for a CPU.
"""

import csv
import dataclasses
import datetime
import glob
import json
import os
import platform
import re
import signal
import subprocess
import sys
import tarfile
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from absl import app
from absl import flags

from scripts.experiments import evidence_bench
from scripts.experiments import evidence_estimate
from scripts.experiments import evidence_plan
from scripts.experiments import evidence_report
from scripts.experiments import evidence_schedule
from scripts.experiments import evidence_store
from zoo.configuration import cli
from zoo.storage import files

FLAGS = flags.FLAGS
# The repository root: scripts/experiments/evidence.py is three levels down.
ROOT = os.path.abspath(os.path.join(os.path.dirname(__file__), '..', '..'))

PROBE = ('import json, platform, jax; d = jax.devices()[0]; '
         'print(json.dumps({"platform": d.platform, "device_kind": '
         'd.device_kind, "device_count": jax.device_count(), "jax": '
         'jax.__version__, "python": platform.python_version()}))')
# The benchmarks' share of the budget at most: the rest moves the plan.
MEASURE_SHARE = 0.5
BENCHMARK_CAP = 2.0   # A benchmark is stopped at this many times its estimate.
JAX_CACHE = 'jax-cache'  # The tasks' compilation cache, under --work_dir.
_COMPILE = re.compile(r'Finished XLA compilation of (\S+) in ([0-9.]+) sec')
# JAX_LOG_COMPILES' lines that only repeat shapes: dropped from the logs kept.
_NOISE = ('with global shapes and types', 'Finished tracing + transforming',
          'Finished jaxpr to MLIR')


def define_flags() -> None:
  """Define the flags of this entry point (only when run)."""
  flags.DEFINE_float('budget_minutes', 8.0, 'Hard deadline of the command, '
                     'in minutes: a little under the GPU allocation left.')
  flags.DEFINE_string('output_dir', None, 'Where the archive goes (a folder you '
                      'copy back from the GPU machine).')
  flags.DEFINE_string('evidence_dir', os.path.join(ROOT, 'evidence'),
                      'The results folder (progress is read from it).')
  flags.DEFINE_string('work_dir', None, 'Where the session is written before '
                      'packing; unset: a folder under /tmp.')
  flags.DEFINE_enum('measure', 'auto', ['auto', 'always', 'never'],
                    'Benchmarks: auto: unless the results folder holds this '
                    'device kind and code version.')
  flags.DEFINE_float('measure_share', MEASURE_SHARE, 'The fraction of the '
                     'budget the benchmarks may take at most; the rest moves '
                     'the plan.')
  flags.DEFINE_bool('rehearsal', False, 'Tiny scale, for a CPU rehearsal.')
  flags.DEFINE_list('pieces', [], 'Only these piece ids (default: the plan).')
  flags.DEFINE_integer('max_side_by_side', 4, 'Most MinAtar runs at once.')
  flags.DEFINE_float('pack_reserve_s', 20.0, 'Seconds kept for packing.')
  flags.DEFINE_string('ingest', None, 'Unpack this archive into '
                      '--evidence_dir and rewrite --report_path.')
  flags.DEFINE_bool('report', False, 'Rewrite --report_path and stop.')
  flags.DEFINE_string('report_path', os.path.join(ROOT, 'docs', 'evidence.md'),
                      'The generated report of the results folder.')
  flags.DEFINE_bool('dry_run', False, 'Print the plan, its progress and the '
                    'next pieces\' estimates; run nothing.')


@dataclasses.dataclass
class Options:
  budget_s: float
  output_dir: str
  evidence_dir: str
  work_dir: str
  scale: evidence_plan.Scale = evidence_plan.FULL
  measure: str = 'auto'
  measure_share: float = MEASURE_SHARE
  only: Sequence[str] = ()
  max_side_by_side: int = 4
  pack_reserve_s: float = 20.0
  dry_run: bool = False
  python: str = sys.executable
  root: str = ROOT
  command: str = ''
  later_presets: Sequence[str] = ()
  packages: Dict[str, str] = dataclasses.field(
      default_factory=lambda: dict(evidence_plan.PACKAGES))


def probe_device(python: str) -> Dict[str, Any]:
  """Return the JAX device and versions, from a child process."""
  out = subprocess.run([python, '-c', PROBE], capture_output=True, text=True,
                       timeout=180, cwd=ROOT, check=True)
  return json.loads(out.stdout.strip().splitlines()[-1])


def compile_seconds(log_text: str) -> Dict[str, float]:
  """Return {program: seconds} of JAX_LOG_COMPILES' lines (summed)."""
  out: Dict[str, float] = {}
  for m in _COMPILE.finditer(log_text):
    out[m.group(1)] = out.get(m.group(1), 0.0) + float(m.group(2))
  return out


def clean_log(path: str) -> str:
  """Drop the shape-only compile lines from a task's log; return its text."""
  if not os.path.exists(path):
    return ''
  with open(path, errors='replace') as f:
    lines = [l for l in f if not any(n in l for n in _NOISE)]
  text = ''.join(lines)
  with open(path, 'w') as f:
    f.write(text)
  return text


def read_csv_rows(path: str) -> List[Dict[str, str]]:
  with open(path, newline='') as f:
    return list(csv.DictReader(f))


def _float(text: Optional[str]) -> Optional[float]:
  try:
    value = float(text)
  except (TypeError, ValueError):
    return None
  return value if value == value else None


def run_results(session_dir: str, run: evidence_plan.Run) -> Dict[str, Any]:
  """Return the CSVs of a run, its iterations and its last iteration's
  training and evaluation rates (median over seeds)."""
  paths = sorted(glob.glob(os.path.join(session_dir, run.results_dir, '**',
                                        'results.csv'), recursive=True))
  last, train, evaluation, complete = [], [], [], bool(paths)
  for path in paths:
    rows = read_csv_rows(path)
    iterations = [int(r['iteration']) for r in rows]
    last.append(max(iterations) if iterations else -1)
    complete &= bool(iterations) and max(iterations) >= run.iterations
    if rows:
      train.append(_float(rows[-1].get('train_frame_rate')))
      evaluation.append(_float(rows[-1].get('eval_frame_rate')))
  complete &= len(paths) == len(run.seeds)
  return {
      'csvs': [os.path.relpath(p, session_dir) for p in paths],
      'iterations_done': min(last) if last else -1,
      'complete': complete,
      'train_rate': evidence_estimate.median_or_none(
          v for v in train if v is not None),
      'eval_rate': evidence_estimate.median_or_none(
          v for v in evaluation if v is not None),
  }


class Session:
  """One command's work: measure, advance the plan, pack."""

  def __init__(self, opts: Options, clock: evidence_schedule.Clock,
               start: Callable[[evidence_schedule.Task],
                               evidence_schedule.Handle],
               machine: Dict[str, Any], now_utc: datetime.datetime,
               say: Callable[[str], None] = print):
    self.opts, self.clock, self.start = opts, clock, start
    self.started = clock.now()
    self.deadline = evidence_schedule.Deadline(
        clock, opts.budget_s - opts.pack_reserve_s)
    kind = re.sub(r'[^A-Za-z0-9]+', '-', machine['device_kind']).strip('-')
    self.id = now_utc.strftime('%Y%m%d-%H%M%S') + '-' + kind.lower()
    self.dir = os.path.join(opts.work_dir, self.id)
    os.makedirs(self.dir, exist_ok=True)
    self.past = evidence_store.load_sessions(opts.evidence_dir)
    self.record: Dict[str, Any] = {
        'id': self.id, 'date_utc': now_utc.strftime('%Y-%m-%d'),
        'started_utc': now_utc.strftime('%Y-%m-%dT%H:%M:%SZ'),
        'machine': machine, 'command': opts.command,
        'code_version': evidence_store.code_version(opts.root),
        'budget_minutes': round(opts.budget_s / 60, 2),
        'scale': opts.scale.name, 'benchmarks': [], 'pieces': [],
        'skipped': [], 'status': 'running', 'dir': self.dir}
    self._say = say
    self._log = open(os.path.join(self.dir, 'log.txt'), 'a')

  # --- helpers --------------------------------------------------------------
  def say(self, message: str) -> None:
    line = f'[{self.clock.now() - self.started:6.0f} s] {message}'
    self._say(line)
    self._log.write(line + '\n')
    self._log.flush()

  def speeds(self) -> evidence_estimate.Speeds:
    m = self.record['machine']
    return evidence_estimate.speeds(self.past + [self.record],
                                    m['device_kind'], m['platform'],
                                    self.opts.scale.name)

  def _env(self, concurrency: int = 1) -> Dict[str, str]:
    # One persistent compilation cache for every task (in the work folder,
    # outside the session folder that is packed): a task whose program
    # another compiled loads it, and its compile time printed says so.
    env = dict(os.environ, JAX_LOG_COMPILES='1', PYTHONUNBUFFERED='1',
               JAX_COMPILATION_CACHE_DIR=os.path.join(self.opts.work_dir,
                                                      JAX_CACHE),
               JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS='0')
    if concurrency > 1:
      # Processes sharing one GPU: each its share, none the default 75%.
      env['XLA_PYTHON_CLIENT_MEM_FRACTION'] = f'{0.9 / concurrency:.2f}'
    return env

  def _task(self, name: str, argv: Sequence[str], log: str,
            concurrency: int = 1) -> evidence_schedule.Task:
    return evidence_schedule.Task(
        name, [self.opts.python, '-m'] + list(argv),
        os.path.join(self.dir, log), cwd=self.opts.root,
        env=self._env(concurrency))

  def _compiled(self, name: str, text: str) -> float:
    programs = compile_seconds(text)
    total = sum(programs.values())
    if programs:
      top = max(programs, key=programs.get)
      self.say(f'{name}: compiled {len(programs)} programs in {total:.1f} s '
               f'(largest {top}: {programs[top]:.1f} s)')
    return round(total, 1)

  def _save(self) -> None:
    evidence_store.write_session(self.dir, self.record)

  # --- a. measure -------------------------------------------------------------
  def piece_seconds(self, piece: evidence_plan.Piece) -> float:
    """The shortest estimated duration a piece can start with (MinAtar: all
    its runs, side by side as measured; Atari: one iteration)."""
    scale, speeds = self.opts.scale, self.speeds()
    if piece.suite != 'minatar':
      mode = speeds.best_mode or scale.atari_default_mode
      return speeds.atari_seconds(mode, 1, scale.atari_train_frames,
                                  scale.atari_eval_frames)
    seeds = len(scale.minatar_seeds)
    count = len(evidence_plan.runs(piece, scale, packages=self.opts.packages))
    c = min(speeds.side_by_side(seeds, self.opts.max_side_by_side), count)
    return -(-count // c) * speeds.minatar_seconds(
        seeds, scale.minatar_iterations, scale.minatar_train_steps,
        scale.minatar_eval_steps, concurrency=c)

  def plan_reserve(self) -> float:
    """Seconds kept from the benchmarks for the first pending piece that fits
    the time left now (0 when none fits): a piece that fits always starts."""
    for piece in self.pending():
      seconds = self.piece_seconds(piece)
      if self.deadline.fits(seconds):
        self.say(f'plan: {piece.id} fits (~{seconds:.0f} s); kept from the '
                 'benchmarks')
        return seconds
    return 0.0

  def pending(self) -> List[evidence_plan.Piece]:
    plan = evidence_plan.pieces(self.opts.later_presets)
    return evidence_plan.pending(plan, evidence_store.done_pieces(self.past),
                                 self.opts.only)

  def benchmarks_due(self) -> List[Tuple[evidence_bench.Benchmark, str]]:
    """Return (benchmark, code) of those to measure, in order: first those
    never measured on this device kind, the newest in the list first; then
    those whose benchmarked code changed, the longest unmeasured first. A
    GPU-only benchmark on another platform is recorded as skipped."""
    m = self.record['machine']
    past = [s for s in self.past if s.get('scale') == self.opts.scale.name]
    order = {s['id']: i for i, s in enumerate(past)}
    never, stale = [], []
    for bench in evidence_bench.benchmarks(self.opts.scale.name):
      code = evidence_store.source_hash(self.opts.root, bench.sources,
                                        bench.argv)
      if bench.gpu_only and m['platform'] != 'gpu':
        reason = (f'GPU-only: it measures what only a GPU has, and the JAX '
                  f'device here is {m["platform"]}')
        self.say(f'benchmark {bench.name}: skipped ({reason})')
        self.record['benchmarks'].append(
            {'name': bench.name, 'status': 'skipped', 'reason': reason,
             'code': code, 'command': 'python -m ' + ' '.join(bench.argv)})
        continue
      if self.opts.measure == 'auto':
        earlier = evidence_store.last_measured(past, m['device_kind'],
                                               bench.name, code)
        if earlier:
          self.say(f'benchmark {bench.name}: its code {code} on '
                   f'{m["device_kind"]} measured in {earlier}')
          continue
      last = evidence_store.last_measured(past, m['device_kind'], bench.name)
      if last is None:
        never.append((bench, code))
      else:
        stale.append((order[last], bench, code))
    # Stable sorts: benchmarks added the same day keep the list's order.
    never.sort(key=lambda item: item[0].added, reverse=True)
    stale.sort(key=lambda item: item[0])
    return never + [(bench, code) for _, bench, code in stale]

  def measure(self) -> None:
    m = self.record['machine']
    if self.opts.measure == 'never':
      self.say('benchmarks: not measured (--measure=never)')
      return
    due = self.benchmarks_due()
    if not due:
      return
    share = self.opts.measure_share * self.opts.budget_s
    window = evidence_schedule.Deadline(
        self.clock, max(0.0, min(share, self.deadline.left() -
                                 self.plan_reserve())))
    self.say(f'benchmarks: {len(due)} due, {window.left():.0f} s for them')
    speeds = self.speeds()
    tables = []
    for bench, code in due:
      estimate = speeds.benchmark_estimate(bench.name, bench.default_seconds)
      if not window.fits(estimate):
        self.say(f'benchmark {bench.name}: needs ~{estimate:.0f} s, '
                 f'{window.left():.0f} s left for benchmarks: skipped')
        self.record['skipped'].append(f'benchmark {bench.name}')
        continue
      self.say(f'benchmark {bench.name}: {" ".join(bench.argv)} '
               f'(~{estimate:.0f} s)')
      log = f'benchmarks/{bench.name}.txt'
      task = self._task(bench.name, bench.argv, log)
      # A benchmark that hangs must not take the whole window.
      cap = evidence_schedule.Deadline(
          self.clock, min(window.left(), BENCHMARK_CAP * estimate))
      outcome = evidence_schedule.run_together([task], cap, self.start)[0]
      text = clean_log(task.log_path)
      entry = {'name': bench.name, 'command': 'python -m ' +
               ' '.join(bench.argv), 'status': outcome.status,
               'returncode': outcome.returncode, 'code': code,
               'seconds': round(outcome.seconds, 1), 'output': log,
               'compile_s': self._compiled(bench.name, text),
               'figures': (evidence_bench.parse(bench, text)
                           if outcome.status == 'ok' else {})}
      self.record['benchmarks'].append(entry)
      self.say(f'benchmark {bench.name}: {outcome.status} in '
               f'{outcome.seconds:.0f} s')
      if outcome.status == 'ok':
        tables.append(f'## {bench.name}\n\n`{entry["command"]}`\n\n' +
                      evidence_bench.tables(text) + '\n')
      self._save()
    if tables:
      with open(os.path.join(self.dir, 'benchmarks.md'), 'w') as f:
        f.write(f'# Benchmarks, {m["device_kind"]}, jax {m["jax"]}, '
                f'{m["cpu_count"]} CPUs, {self.record["date_utc"]}\n\n' +
                '\n'.join(tables))

  # --- b. advance the plan ------------------------------------------------------
  def _absolute(self, argv: Sequence[str]) -> List[str]:
    key = '--results_csv_path='
    return [key + os.path.join(self.dir, a[len(key):])
            if a.startswith(key) else a for a in argv]

  def _run_wave(self, runs: Sequence[evidence_plan.Run],
                extra: Dict[str, Any]) -> List[Dict[str, Any]]:
    concurrency = len(runs)
    tasks = []
    for run in runs:
      log = f'logs/{run.piece}-{run.label}.txt'
      tasks.append(self._task(f'{run.piece}/{run.label}',
                              self._absolute(run.argv), log, concurrency))
      self.say(f'start {run.piece} {run.label}: python -m '
               f'{" ".join(run.argv)}')
    outcomes = evidence_schedule.run_together(tasks, self.deadline,
                                              self.start)
    records = []
    for run, task, outcome in zip(runs, tasks, outcomes):
      text = clean_log(task.log_path)
      results = run_results(self.dir, run)
      status = ('complete' if outcome.status == 'ok' and results['complete']
                else outcome.status if outcome.status != 'ok' else 'incomplete')
      record = dict(
          piece=run.piece, label=run.label, suite=run.suite, seeds=list(run.seeds),
          command='python -m ' + ' '.join(run.argv), status=status,
          returncode=outcome.returncode, seconds=round(outcome.seconds, 1),
          concurrency=concurrency, iterations=run.iterations,
          log=os.path.relpath(task.log_path, self.dir),
          compile_s=self._compiled(task.name, text), **results, **extra)
      self.say(f'{task.name}: {status} in {outcome.seconds:.0f} s, '
               f'{results["iterations_done"]} iterations, train rate '
               f'{results["train_rate"]}')
      records.append(record)
    return records

  def _piece_record(self, piece: evidence_plan.Piece,
                    runs: List[Dict[str, Any]], planned: int,
                    estimate: float) -> Dict[str, Any]:
    # Complete: every planned run ran and completed (a deadline between
    # waves leaves runs that never started).
    status = ('complete' if len(runs) == planned and
              all(r['status'] == 'complete' for r in runs) else 'incomplete')
    record = {'id': piece.id, 'title': piece.title, 'status': status,
              'estimate_s': round(estimate), 'runs': runs}
    self.record['pieces'].append(record)
    self._save()
    return record

  def _minatar_batch(self, queue: List[evidence_plan.Piece]) -> bool:
    """Run the next MinAtar pieces (side by side where it helps)."""
    scale, speeds = self.opts.scale, self.speeds()
    seeds = len(scale.minatar_seeds)
    k = speeds.side_by_side(seeds, self.opts.max_side_by_side)
    batch = []
    for piece in queue:
      if piece.suite != 'minatar':
        break
      runs = evidence_plan.runs(piece, scale, packages=self.opts.packages)
      if batch and sum(len(r) for _, r in batch) + len(runs) > k:
        break
      batch.append((piece, runs))
    while batch:
      all_runs = [r for _, r in batch for r in r]
      c = min(k, len(all_runs))
      waves = [all_runs[i:i + c] for i in range(0, len(all_runs), c)]
      one = speeds.minatar_seconds(seeds, scale.minatar_iterations,
                                   scale.minatar_train_steps,
                                   scale.minatar_eval_steps, concurrency=c)
      estimate = len(waves) * one
      if self.deadline.fits(estimate):
        break
      if len(batch) == 1:
        self.say(f'{batch[0][0].id}: needs ~{estimate:.0f} s, '
                 f'{self.deadline.left():.0f} s left: not started')
        self.record['skipped'].append(batch[0][0].id)
        queue.remove(batch[0][0])
        return False
      batch.pop()
    self.say(f'pieces {", ".join(p.id for p, _ in batch)}: {len(all_runs)} '
             f'runs, {c} at a time, ~{estimate:.0f} s '
             f'({speeds.per_seed_rate(seeds, c):.0f} steps/s per seed '
             f'expected), {self.deadline.left():.0f} s left')
    records = []
    for wave in waves:
      if self.deadline.left() <= 0:
        break
      records += self._run_wave(wave, {})
    for piece, runs in batch:
      self._piece_record(piece, [r for r in records
                                 if r['piece'] == piece.id], len(runs), one)
      queue.remove(piece)
    return True

  def _atari(self, piece: evidence_plan.Piece,
             queue: List[evidence_plan.Piece]) -> bool:
    scale, speeds = self.opts.scale, self.speeds()
    queue.remove(piece)
    mode = speeds.best_mode or scale.atari_default_mode
    n = speeds.atari_iterations(mode, self.deadline.left(),
                                scale.atari_train_frames,
                                scale.atari_eval_frames,
                                evidence_plan.ATARI_MAX_ITERATIONS)
    if n == 0:
      one = speeds.atari_seconds(mode, 1, scale.atari_train_frames,
                                 scale.atari_eval_frames)
      self.say(f'{piece.id}: one iteration needs ~{one:.0f} s, '
               f'{self.deadline.left():.0f} s left: not started')
      self.record['skipped'].append(piece.id)
      return False
    estimate = speeds.atari_seconds(mode, n, scale.atari_train_frames,
                                    scale.atari_eval_frames)
    self.say(f'{piece.id}: mode {mode}, {n} iterations, ~{estimate:.0f} s')
    runs = evidence_plan.runs(piece, scale, n, mode, self.opts.packages)
    records = self._run_wave(runs, {'mode': mode})
    for run, record in zip(runs, records):
      if record['status'] == 'complete' and piece.judge:
        record['judge'] = self._judge(piece, run)
    self._piece_record(piece, records, len(runs), estimate)
    return True

  def _judge(self, piece: evidence_plan.Piece, run: evidence_plan.Run) -> str:
    log = f'judge/{piece.id}.txt'
    argv = ('scripts.analysis.compare_published',
            f'--runs={run.label}={os.path.join(self.dir, run.results_dir)}')
    window = evidence_schedule.Deadline(
        self.clock, self.deadline.left() + self.opts.pack_reserve_s / 2)
    outcome = evidence_schedule.run_together(
        [self._task('judge', argv, log)], window, self.start)[0]
    self.say(f'{piece.id}: compare_published {outcome.status}; see {log}')
    return log

  def advance(self) -> None:
    plan = evidence_plan.pieces(self.opts.later_presets)
    done = evidence_store.done_pieces(self.past)
    queue = self.pending()
    self.say(f'plan: {len(done)} of {len(plan)} pieces done; next: '
             f'{", ".join(p.id for p in queue[:3]) or "none"}')
    while queue and self.deadline.left() > 0:
      if queue[0].suite == 'minatar':
        self._minatar_batch(queue)
      else:
        self._atari(queue[0], queue)

  def dry_run(self) -> None:
    plan = evidence_plan.pieces(self.opts.later_presets)
    done = evidence_store.done_pieces(self.past)
    speeds, scale = self.speeds(), self.opts.scale
    seeds = len(scale.minatar_seeds)
    k = speeds.side_by_side(seeds, self.opts.max_side_by_side)
    one = speeds.minatar_seconds(seeds, scale.minatar_iterations,
                                 scale.minatar_train_steps,
                                 scale.minatar_eval_steps, concurrency=k)
    mode = speeds.best_mode or scale.atari_default_mode
    self.say(f'MinAtar run ({seeds} seeds vmapped) ~{one:.0f} s with {k} at a '
             f'time; Atari mode {mode}: one iteration ~'
             f'{speeds.atari_seconds(mode, 1, scale.atari_train_frames, scale.atari_eval_frames):.0f} s')
    for piece in plan:
      where = done.get(piece.id)
      self.say(f'  {piece.id}: {"done in " + where if where else "pending"}')

  # --- c. pack ---------------------------------------------------------------------
  def finish(self, status: str) -> str:
    self.record['status'] = status
    self.record['seconds'] = round(self.clock.now() - self.started, 1)
    self.record['finished_utc'] = datetime.datetime.now(
        datetime.timezone.utc).strftime('%Y-%m-%dT%H:%M:%SZ')
    self._save()
    self.say(f'session {self.id}: {status}; packing')
    self._log.close()
    os.makedirs(self.opts.output_dir, exist_ok=True)
    return evidence_store.pack(self.dir, self.opts.output_dir)


def run_session(opts: Options, clock: evidence_schedule.Clock,
                start: Callable, machine: Dict[str, Any],
                now_utc: datetime.datetime,
                say: Callable[[str], None] = print) -> str:
  """Measure, advance the plan and pack; return the archive's path.

  An exception (Ctrl-C, SIGTERM) still packs what finished, then propagates.
  """
  session = Session(opts, clock, start, machine, now_utc, say)
  session.say(f'session {session.id} on {machine["device_kind"]} '
              f'({machine["platform"]}, jax {machine["jax"]}, '
              f'{machine["cpu_count"]} CPUs); code '
              f'{session.record["code_version"]}; budget '
              f'{opts.budget_s:.0f} s')
  if opts.dry_run:
    session.dry_run()
    return ''
  try:
    session.measure()
    session.advance()
  except BaseException:
    path = session.finish('interrupted')
    say(f'archive: {path}')
    raise
  path = session.finish('done')
  say(f'archive: {path}')
  return path


def write_reports() -> None:
  """Rewrite --report_path and, from the repository's own results folder,
  the generated sections of the README and the docs."""
  evidence_report.write(FLAGS.evidence_dir, FLAGS.report_path)
  print(f'wrote {FLAGS.report_path}')
  if os.path.abspath(FLAGS.evidence_dir) != os.path.join(ROOT, 'evidence'):
    print('the README and the docs follow evidence/ only: not rewritten')
    return
  for page in evidence_report.write_pages(ROOT, FLAGS.evidence_dir):
    print(f'wrote {page}')


def _sigterm(signum, frame):
  del signum, frame
  raise KeyboardInterrupt('SIGTERM')


ARCHIVE_FIX = ('Pass the evidence-<id>.tar.gz that python -m '
               'scripts.experiments.evidence wrote to its --output_dir, copied '
               'whole.')


def check_inputs() -> None:
  """Refuse bad flags and a damaged results folder before any work.

  Raises:
    ValueError: naming the problem and the fix.
  """
  if FLAGS.budget_minutes <= 0:
    raise ValueError(f'--budget_minutes={FLAGS.budget_minutes:g} must be '
                     'positive: the hard deadline in minutes, e.g. 8.')
  known = [p.id for p in evidence_plan.registry_plan()]
  unknown = [p for p in FLAGS.pieces if p not in known]
  if unknown:
    raise ValueError(f'--pieces: no piece {", ".join(unknown)} in the plan. '
                     f'Pass ids of the plan: {", ".join(known)}.')
  if FLAGS.ingest is not None and not os.path.isfile(FLAGS.ingest):
    raise ValueError(f'--ingest={FLAGS.ingest}: no such file. {ARCHIVE_FIX}')
  evidence_store.load_sessions(FLAGS.evidence_dir)  # A damaged record stops.
  if not (FLAGS.ingest or FLAGS.report) and FLAGS.output_dir:
    try:
      files.make_writable_directory(FLAGS.output_dir)
    except OSError as e:
      raise ValueError(f'--output_dir={FLAGS.output_dir} is not writable '
                       f'({e.strerror}). Pass a writable directory.') from e


def ingest() -> str:
  """Unpack --ingest into --evidence_dir; return the session's folder."""
  try:
    return evidence_store.ingest(FLAGS.ingest, FLAGS.evidence_dir)
  except (tarfile.TarError, EOFError, OSError) as e:
    reason = str(e).splitlines()[0] if str(e) else type(e).__name__
    raise ValueError(f'--ingest={FLAGS.ingest} is not a readable archive '
                     f'({reason}). {ARCHIVE_FIX}') from e
  except ValueError as e:
    raise ValueError(f'--ingest: {e} {ARCHIVE_FIX}') from e


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  try:
    check_inputs()
    if FLAGS.ingest:
      print(f'ingested into {ingest()}')
  except ValueError as e:
    sys.exit(f'Error: {e}')
  if FLAGS.ingest or FLAGS.report:
    write_reports()
    return
  if not FLAGS.output_dir:
    raise app.UsageError('Pass --output_dir (where the archive goes).')
  signal.signal(signal.SIGTERM, _sigterm)
  clock = evidence_schedule.RealClock()
  now = datetime.datetime.now(datetime.timezone.utc)
  machine = dict(probe_device(sys.executable), hostname=platform.node(),
                 cpu_count=os.cpu_count())
  packages = evidence_plan.registry_packages()
  work_dir = FLAGS.work_dir or os.path.join('/tmp', 'evidence-work')
  opts = Options(
      budget_s=FLAGS.budget_minutes * 60 - (clock.now() - START),
      output_dir=FLAGS.output_dir, evidence_dir=FLAGS.evidence_dir,
      work_dir=work_dir, measure=FLAGS.measure,
      scale=evidence_plan.REHEARSAL if FLAGS.rehearsal else evidence_plan.FULL,
      measure_share=FLAGS.measure_share, only=tuple(FLAGS.pieces),
      max_side_by_side=FLAGS.max_side_by_side,
      pack_reserve_s=FLAGS.pack_reserve_s, dry_run=FLAGS.dry_run,
      command=' '.join(['python -m scripts.experiments.evidence'] + sys.argv[1:]),
      later_presets=sorted(packages), packages=packages)
  try:
    run_session(opts, clock, evidence_schedule.GroupProcess, machine, now)
  except KeyboardInterrupt:
    sys.exit(130)


START = evidence_schedule.RealClock().now()

if __name__ == '__main__':
  define_flags()
  cli.run(main)
