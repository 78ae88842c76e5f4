r"""Measure short Atari runs on a GPU: their memory, and runs sharing the GPU.

  python -m scripts.benchmarks.bench_gpu [--measure=memory,sharing]
      [--num_train_frames=100000] [--num_eval_frames=4096]
      [--replay_capacity=20000]
  python -m scripts.benchmarks.bench_gpu --measure=packing \
      [--packing_runs=1,2,4,8,16] [--packing_train_frames=20000]

Every run is `cr_dqn.run_atari` (Pong, --num_envs=64, a replay full within
the run, in host RAM) in a child process that prints JAX's memory statistics
of the device at its exit; its training frames/s is read back from its CSV.

memory: one run as JAX starts by default (75% of the GPU at once), then one
with XLA_PYTHON_CLIENT_PREALLOCATE=false: JAX's peak bytes in use and limit,
and nvidia-smi's peak memory.used over the idle GPU (the CUDA context
included).
sharing: one run alone, then two at once with the variables the campaign
gives two runs on one GPU (scripts.campaign.launch.local_slots): whether both
finished, their training frames/s and JAX's peak bytes in use, and their
total against the run alone.
packing: Atari 100k runs (--protocol=atari100k, CR-DQN, Pong, one stream
each) started N at a time on the GPU for each N of --packing_runs, with the
variables the campaign gives N runs on one GPU: each one iteration of
--packing_train_frames, learning from its 200th transition, so that the
rate is the learning rate of a whole run. Per N: whether all finished, the
rate of each and their total against one run alone; then the N of the
highest total, the --parallel that gets the most out of one GPU. A larger
N is not tried once one fails.

The last line, `figures:`, holds the figures as JSON (none of what a failed
run did not measure); the exit status is 1 if a run to compare with failed.
GPU-only: on any other device it stops with an Error line.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from absl import flags

from scripts.analysis import run_data
from scripts.benchmarks import harness
from scripts.campaign import launch
from zoo.configuration import cli

FLAGS = flags.FLAGS
MEASURES = ('memory', 'sharing', 'packing')
MODULE = 'cr_dqn.run_atari'
# The run: Pong's episodes end even untrained (a stuck game would make the
# evaluation's whole episodes long); 64 streams, the mode a campaign uses.
GAME = 'pong'
NUM_ENVS = 64
RUN = 'Atari Pong, `--num_envs=64`, the replay full'
RUNS_PER_GPU = 2
PACKED_RUN = 'Atari 100k, CR-DQN, Pong'
# memory's settings: (name, what, the run's own variables).
MEMORY_SETTINGS = (
    ('preallocated', 'JAX\'s default (preallocation)', {}),
    ('on_demand', 'XLA_PYTHON_CLIENT_PREALLOCATE=false',
     {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}),
)
# JAX's memory statistics kept (jax.Device.memory_stats(); absent on a CPU).
STATS = ('peak_bytes_in_use', 'bytes_in_use', 'bytes_limit',
         'bytes_reserved', 'pool_bytes', 'peak_pool_bytes',
         'largest_alloc_size')
STATS_PREFIX = 'memory_stats: '

# Runs `python -m MODULE ARGS...` in this process (runpy), then prints the
# device's memory statistics at exit. JAX is imported first, so that this
# exit handler runs before JAX's own (atexit's last in, first out).
CHILD = """
import atexit, json, runpy, sys
import jax
def _report():
  stats = jax.devices()[0].memory_stats() or {{}}
  print({prefix!r} + json.dumps({{k: stats[k] for k in {stats!r} if k in stats}}),
        flush=True)
atexit.register(_report)
sys.argv = [{module!r}] + {args!r}
runpy.run_module({module!r}, run_name='__main__', alter_sys=True)
"""


def run_argv(results_csv: str, train_frames: int, eval_frames: int,
             replay_capacity: int) -> List[str]:
  """Return the flags of the measured run (one iteration after iteration 0)."""
  return [f'--environment_name={GAME}', f'--num_envs={NUM_ENVS}',
          '--num_iterations=1', f'--num_train_frames={train_frames}',
          f'--num_eval_frames={eval_frames}',
          f'--replay_capacity={replay_capacity}',
          f'--results_csv_path={results_csv}', '--checkpoint_dir=',
          '--tensorboard_dir=']


def packing_argv(results_csv: str, train_frames: int) -> List[str]:
  """Return the flags of a packed run: one Atari 100k iteration, learning
  from the 200th transition, one evaluation episode."""
  return ['--protocol=atari100k', f'--environment_name={GAME}',
          '--num_iterations=1', f'--num_train_frames={train_frames}',
          '--min_replay_capacity_fraction=0.002', '--num_eval_episodes=1',
          '--num_final_eval_episodes=1', f'--results_csv_path={results_csv}',
          '--checkpoint_dir=', '--tensorboard_dir=']


def parse_stats(text: str) -> Optional[Dict[str, int]]:
  """Return the last memory statistics a child printed, None if none."""
  found = None
  for line in text.splitlines():
    if line.startswith(STATS_PREFIX):
      found = json.loads(line[len(STATS_PREFIX):])
  return found


def train_rate(results_csv: str) -> Optional[float]:
  """Return the last iteration's training frames/s of a run's CSV."""
  if not os.path.isfile(results_csv):
    return None
  try:
    return float(run_data.read_rows(results_csv, ())[-1]['train_frame_rate'])
  except (IndexError, KeyError, TypeError, ValueError):
    return None


def nvidia_smi_used_mib(gpu: str = '0') -> Optional[float]:
  """Return the memory.used of one GPU by nvidia-smi, MiB; None without it."""
  if shutil.which('nvidia-smi') is None:
    return None
  try:
    out = subprocess.run(
        ['nvidia-smi', '--query-gpu=memory.used', '--format=csv,noheader,'
         'nounits', '-i', gpu], capture_output=True, text=True, timeout=10,
        check=True).stdout
    return float(out.strip().splitlines()[0])
  except (OSError, subprocess.SubprocessError, ValueError, IndexError):
    return None


def peak_while(process: subprocess.Popen,
               read: Callable[[], Optional[float]],
               interval_s: float = 0.5) -> Optional[float]:
  """Return the peak of `read` (nvidia-smi's memory.used), read every
  interval_s until `process` ends; None if it never read (None)."""
  peak = None
  while True:
    value = read()
    if value is not None:
      peak = value if peak is None else max(peak, value)
    try:
      process.wait(interval_s)
      return peak
    except subprocess.TimeoutExpired:
      pass


@dataclasses.dataclass
class Outcome:
  """One child run: its exit status, output, memory statistics and rate."""
  returncode: int
  output: str
  stats: Optional[Dict[str, int]]
  train_rate: Optional[float]


def start(work: str, name: str, env: Dict[str, str], sizes: Sequence[int],
          module: str = MODULE, argv: Callable[..., List[str]] = run_argv
          ) -> Tuple[subprocess.Popen, str, str]:
  """Start the measured run as `name` under `work`, with the variables `env`
  and the flags argv(its CSV, *sizes) (run_argv's sizes: training frames,
  evaluation frames, replay capacity); return it, its log and its CSV (for
  finish)."""
  csv_path = os.path.join(work, name, 'results.csv')
  os.makedirs(os.path.dirname(csv_path))
  log_path = os.path.join(work, f'{name}.log')
  args = argv(csv_path, *sizes)
  print(f'{name}: {" ".join(f"{k}={v}" for k, v in sorted(env.items()))} '
        f'python -m {module} {" ".join(args)}', flush=True)
  with open(log_path, 'w') as log:  # The child keeps its own handle.
    process = subprocess.Popen(
        [sys.executable, '-c', CHILD.format(prefix=STATS_PREFIX, stats=STATS,
                                            module=module, args=args)],
        stdout=log, stderr=subprocess.STDOUT,
        env=dict(os.environ, **env), stdin=subprocess.DEVNULL)
  return process, log_path, csv_path


def finish(process: subprocess.Popen, log_path: str,
           results_csv: str) -> Outcome:
  """Wait for a child run; return what it did."""
  returncode = process.wait()
  with open(log_path, errors='replace') as f:
    output = f.read()
  return Outcome(returncode, output, parse_stats(output),
                 train_rate(results_csv))


def require_gpu() -> None:
  """Raise ValueError unless JAX's first device is a GPU. A child process
  asks: JAX started here would hold GPU memory that the runs measure."""
  platform = subprocess.run(
      [sys.executable, '-c', 'import jax; print(jax.devices()[0].platform)'],
      capture_output=True, text=True, check=True).stdout.split()[-1]
  if platform != 'gpu':
    raise ValueError(f'this benchmark measures a GPU, and JAX\'s device here '
                     f'is {platform}. Run it on a machine with a GPU (and a '
                     'CUDA build of JAX).')


def gb(value: Optional[float], scale: float = 1e9) -> str:
  return 'n/a' if value is None else f'{value / scale:.2f} GB'


def report_failures(outcomes: Sequence[Outcome]) -> None:
  """Print the last lines of each failed run's output."""
  for o in outcomes:
    if o.returncode:
      print('\n'.join(o.output.strip().splitlines()[-5:]), flush=True)


def memory_figures(results: Dict[str, Outcome],
                   smi_mib: Dict[str, Optional[float]]
                   ) -> List[Dict[str, str]]:
  """Return memory's figures of the settings run (none of a failed run)."""
  out = []
  for name, what, _ in MEMORY_SETTINGS:
    outcome = results.get(name)
    if outcome is None or outcome.returncode != 0 or not outcome.stats:
      continue
    smi = smi_mib.get(name)
    for quantity, value, measured in (
        ('peak_in_use', outcome.stats.get('peak_bytes_in_use'),
         'JAX\'s peak bytes in use'),
        ('limit', outcome.stats.get('bytes_limit'),
         'JAX\'s memory limit on the GPU'),
        ('nvidia_smi', None if smi is None else smi * 2**20,
         'the GPU\'s memory used, peak (nvidia-smi, the CUDA context '
         'included)')):
      if value is not None:
        out.append(harness.figure(
            f'gpu.memory.{name}.{quantity}', f'one run, {RUN} (in host '
            f'RAM), {what}: {measured}', f'{value / 1e9:.2f}', 'GB'))
  return out


def measure_memory(gpu: str, work: str, sizes: Sequence[int]
                   ) -> Tuple[List[Dict[str, str]], bool]:
  """Run one run per memory setting; print the table; return the figures
  and whether every run finished."""
  results, smi = {}, {}
  for name, what, env in MEMORY_SETTINGS:
    print(f'{name}: {what}', flush=True)
    before = nvidia_smi_used_mib(gpu)
    started = start(work, name, env, sizes)
    peak = peak_while(started[0], lambda: nvidia_smi_used_mib(gpu))
    outcome = results[name] = finish(*started)
    smi[name] = None if peak is None or before is None else peak - before
    print(f'{name}: exit {outcome.returncode}; memory stats '
          f'{outcome.stats}; training {outcome.train_rate} frames/s; GPU '
          f'memory used over the idle GPU {smi[name]} MiB', flush=True)
    report_failures([outcome])
  table = []
  for name, what, _ in MEMORY_SETTINGS:
    o, stats = results[name], results[name].stats or {}
    table.append([what, gb(stats.get('peak_bytes_in_use')),
                  gb(stats.get('bytes_limit')),
                  gb(None if smi[name] is None else smi[name] * 2**20),
                  'failed' if o.returncode else f'{o.train_rate or 0:,.0f}'])
  harness.print_table(
      ['JAX memory setting', 'peak bytes in use (JAX)', "JAX's limit",
       'GPU memory used, peak (nvidia-smi)', 'training frames/s'], table,
      'lrrrr')
  return (memory_figures(results, smi),
          not any(o.returncode for o in results.values()))


def sharing_figures(alone: Outcome, together: Sequence[Outcome],
                    envs: Sequence[Dict[str, str]]) -> List[Dict[str, str]]:
  """Return sharing's figures (none of what a failed run did not measure)."""
  setting = ', '.join(f'{k}={v}' for k, v in sorted(envs[0].items())
                      if k != 'CUDA_VISIBLE_DEVICES') or 'no variable'
  shared = 'two runs sharing the GPU'
  both = all(o.returncode == 0 for o in together)
  rates = [o.train_rate for o in together]
  peaks = [(o.stats or {}).get('peak_bytes_in_use') for o in together]
  alone_rate = alone.train_rate if alone.returncode == 0 else None
  out = [harness.figure('gpu.sharing.both_finished', f'two runs on one GPU '
                        f'({setting} each, the campaign\'s setting): both '
                        'finished', 'yes' if both else 'no', '')]
  if alone_rate:
    out.append(harness.figure('gpu.sharing.alone', 'one run alone on the '
                              f'GPU, {RUN}: training', f'{alone_rate:,.0f}',
                              'frames/s'))
  if both and all(rates):
    out += [harness.figure('gpu.sharing.each', f'{shared}, {RUN}: training,'
                           ' each', ' / '.join(f'{r:,.0f}' for r in rates),
                           'frames/s'),
            harness.figure('gpu.sharing.total', f'{shared}, {RUN}: '
                           'training, both together', f'{sum(rates):,.0f}',
                           'frames/s')]
    if alone_rate:
      out.append(harness.figure('gpu.sharing.gain', f'{shared}: their total '
                                'over one run alone',
                                f'{sum(rates) / alone_rate:.2f}', '×'))
  if both and all(p is not None for p in peaks):
    out.append(harness.figure('gpu.sharing.peak_in_use', f'{shared}: JAX\'s '
                              'peak bytes in use, each',
                              ' / '.join(f'{p / 1e9:.2f}' for p in peaks),
                              'GB'))
  return out


def measure_sharing(gpu: str, work: str, sizes: Sequence[int]
                    ) -> Tuple[List[Dict[str, str]], bool]:
  """Run one run alone, then two together; print the table; return the
  figures and whether the run alone finished."""
  alone = finish(*start(work, 'alone', {'CUDA_VISIBLE_DEVICES': gpu}, sizes))
  # The variables of each run, as the campaign sets them with --parallel=2.
  envs = launch.local_slots(RUNS_PER_GPU, [gpu])
  started = [start(work, f'shared_{i + 1}', env, sizes)
             for i, env in enumerate(envs)]
  together = [finish(*s) for s in started]

  def row(label: str, o: Outcome) -> List[str]:
    rate = 'failed' if o.returncode else f'{o.train_rate or 0:,.0f}'
    return [label, f'exit {o.returncode}', rate,
            gb((o.stats or {}).get('peak_bytes_in_use'))]
  harness.print_table(
      ['run', 'status', 'training frames/s', 'peak bytes in use (JAX)'],
      [row('alone', alone)] + [row(f'shared {i + 1} of 2', o)
                               for i, o in enumerate(together)], 'llrr')
  report_failures([alone] + together)
  return sharing_figures(alone, together, envs), alone.returncode == 0


def packing_figures(levels: Dict[int, Sequence[Outcome]],
                    envs: Dict[int, Sequence[Dict[str, str]]]
                    ) -> List[Dict[str, str]]:
  """Return packing's figures: per N, whether all N runs finished, their
  rates and total; then the N of the highest total of runs that all
  finished (none of what a failed run did not measure)."""
  out, totals = [], {}
  alone = levels.get(1)
  alone_rate = (alone[0].train_rate if alone and alone[0].returncode == 0
                else None)
  for n, outcomes in sorted(levels.items()):
    memory = envs[n][0].get('XLA_PYTHON_CLIENT_MEM_FRACTION')
    what = f'{n} run(s) at once on one GPU, {PACKED_RUN}' + (
        f' (XLA_PYTHON_CLIENT_MEM_FRACTION={memory} each)' if memory else '')
    finished = all(o.returncode == 0 for o in outcomes)
    rates = [o.train_rate for o in outcomes]
    out.append(harness.figure(f'gpu.packing.finished:{n}', f'{what}: all '
                              'finished', 'yes' if finished else 'no', ''))
    if not (finished and all(rates)):
      continue
    totals[n] = sum(rates)
    out += [harness.figure(f'gpu.packing.each:{n}', f'{what}: training, '
                           'the slowest and the fastest run',
                           f'{min(rates):,.0f} / {max(rates):,.0f}',
                           'frames/s'),
            harness.figure(f'gpu.packing.total:{n}', f'{what}: training, '
                           'all together', f'{totals[n]:,.0f}', 'frames/s')]
    if alone_rate:
      out.append(harness.figure(f'gpu.packing.gain:{n}', f'{what}: their '
                                'total over one run alone',
                                f'{totals[n] / alone_rate:.2f}', '×'))
  if totals:
    best = max(totals, key=totals.get)
    out.append(harness.figure('gpu.packing.best', f'{PACKED_RUN}: the runs '
                              'at once with the highest total training rate '
                              '(campaign --parallel per GPU)', str(best), ''))
  return out


def measure_packing(gpu: str, work: str, runs_at_once: Sequence[int],
                    train_frames: int) -> Tuple[List[Dict[str, str]], bool]:
  """Start N runs at once for each N; print the table; return the figures
  and whether every run finished."""
  levels, envs = {}, {}
  for n in sorted(runs_at_once):
    envs[n] = launch.local_slots(n, [gpu])
    started = [start(work, f'packed_{n}_{i + 1}', env, (train_frames,),
                     argv=packing_argv)
               for i, env in enumerate(envs[n])]
    levels[n] = [finish(*s) for s in started]
    report_failures(levels[n])
    if any(o.returncode for o in levels[n]):
      print(f'{n} runs at once: not all finished; no more are tried.',
            flush=True)
      break
  rows = []
  for n, outcomes in levels.items():
    rates = [o.train_rate or 0.0 for o in outcomes if o.returncode == 0]
    failed = sum(1 for o in outcomes if o.returncode)
    rows.append([str(n), f'{n - failed} of {n}',
                 f'{min(rates):,.0f}-{max(rates):,.0f}' if rates else '-',
                 f'{sum(rates):,.0f}' if not failed else '-'])
  harness.print_table(['runs at once', 'finished', 'training frames/s each',
                       'training frames/s, all'], rows, 'rrrr')
  return (packing_figures(levels, envs),
          not any(o.returncode for v in levels.values() for o in v))


def main(argv):
  del argv
  try:
    require_gpu()
  except ValueError as e:
    sys.exit(f'Error: {e}')
  # The runs' GPU: the first of the campaign's (CUDA_VISIBLE_DEVICES first).
  gpu = (launch.visible_gpus() or ['0'])[0]
  work = tempfile.mkdtemp(prefix='bench_gpu-')
  sizes = (FLAGS.num_train_frames, FLAGS.num_eval_frames,
           FLAGS.replay_capacity)
  measures = {
      'memory': lambda: measure_memory(gpu, work, sizes),
      'sharing': lambda: measure_sharing(gpu, work, sizes),
      'packing': lambda: measure_packing(
          gpu, work, [int(n) for n in FLAGS.packing_runs],
          FLAGS.packing_train_frames)}
  figures, finished = [], True
  for name in MEASURES:
    if name in FLAGS.measure:
      got, ok = measures[name]()
      figures, finished = figures + got, finished and ok
  print()
  harness.print_figures(figures)
  if not finished:
    sys.exit(1)


if __name__ == '__main__':
  harness.define_choices('measure', MEASURES[:2], MEASURES,
                         'What to measure')
  flags.DEFINE_integer('num_train_frames', 100_000, 'Training frames of '
                       'each run\'s one iteration.')
  flags.DEFINE_integer('num_eval_frames', 4096, 'Evaluation frames (whole '
                       'episodes are played past them).')
  flags.DEFINE_integer('replay_capacity', 20_000, 'Transitions: full within '
                       'the run.')
  flags.DEFINE_list('packing_runs', ['1', '2', '4', '8', '16'], 'packing: '
                    'the numbers of runs to start at once on one GPU.')
  flags.DEFINE_integer('packing_train_frames', 20_000, 'packing: training '
                       'frames of each run\'s one iteration.', lower_bound=
                       1_000)
  flags.register_validator(
      'packing_runs', lambda values: all(v.isdigit() and int(v) >= 1
                                         for v in values),
      'name whole numbers of runs >= 1, separated by commas, e.g. 1,2,4,8.')
  cli.run(main)
