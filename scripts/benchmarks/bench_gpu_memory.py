r"""Measure a run's GPU memory with and without JAX's preallocation.

  python -m scripts.benchmarks.bench_gpu_memory [--num_train_frames=100000]

Runs `cr_dqn.run_atari` (Pong, --num_envs=64, one iteration) twice, each in a
child process: as JAX starts by default (it takes 75% of the GPU at once),
then with XLA_PYTHON_CLIENT_PREALLOCATE=false (it takes what it needs). The
replay is small enough to be full within the run (--replay_capacity=20000
transitions fills after 80,000 frames); it stays in host RAM, so its size does
not change the GPU's memory: a full-length run's GPU memory is this one's.
Each child prints JAX's memory statistics of the device at its exit (the peak
bytes in use, the pool, the limit); nvidia-smi's memory.used of the GPU is
sampled meanwhile (the CUDA context included). The last line, `figures:`,
holds the figures as JSON, for a record.

GPU-only: on any other device it stops with an Error line.
"""

import os
import sys
import tempfile
from typing import Any, Dict, List

from absl import app
from absl import flags

from scripts.analysis import tables
from scripts.benchmarks import gpu_runs
from scripts.benchmarks import timing
from zoo.configuration import cli

FLAGS = flags.FLAGS
MODULE = 'cr_dqn.run_atari'
# (name, what, the run's own variables).
VARIANTS = (
    ('preallocated', 'JAX\'s default (preallocation)', {}),
    ('on_demand', 'XLA_PYTHON_CLIENT_PREALLOCATE=false',
     {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}),
)


def figures(results: Dict[str, gpu_runs.Outcome],
            smi_mib: Dict[str, Any]) -> List[Dict[str, str]]:
  """Return the figure rows (key, what, value, unit) of the variants run."""
  rows = []
  for name, what, _ in VARIANTS:
    outcome = results.get(name)
    if outcome is None or outcome.returncode != 0 or not outcome.stats:
      continue
    base = (f'one run, Atari Pong, `--num_envs=64`, the replay full (in host '
            f'RAM), {what}')
    peak = outcome.stats.get('peak_bytes_in_use')
    if peak is not None:
      rows.append({'key': f'gpu.memory.{name}.peak_in_use',
                   'what': f'{base}: JAX\'s peak bytes in use',
                   'value': f'{peak / 1e9:.2f}', 'unit': 'GB'})
    limit = outcome.stats.get('bytes_limit')
    if limit is not None:
      rows.append({'key': f'gpu.memory.{name}.limit',
                   'what': f'{base}: JAX\'s memory limit on the GPU',
                   'value': f'{limit / 1e9:.2f}', 'unit': 'GB'})
    if smi_mib.get(name) is not None:
      rows.append({'key': f'gpu.memory.{name}.nvidia_smi',
                   'what': f'{base}: the GPU\'s memory used, peak '
                           '(nvidia-smi, the CUDA context included)',
                   'value': f'{smi_mib[name] * 2**20 / 1e9:.2f}', 'unit': 'GB'})
  return rows


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  try:
    gpu_runs.require_gpu()
  except ValueError as e:
    sys.exit(f'Error: {e}')
  gpu = gpu_runs.visible_gpu()
  work = tempfile.mkdtemp(prefix='bench_gpu_memory-')
  results, smi = {}, {}
  for name, what, env in VARIANTS:
    csv_path = os.path.join(work, name, 'results.csv')
    os.makedirs(os.path.dirname(csv_path))
    log = os.path.join(work, f'{name}.log')
    args = gpu_runs.run_argv(csv_path, FLAGS.num_train_frames,
                             FLAGS.num_eval_frames, FLAGS.replay_capacity)
    print(f'{name} ({what}): python -m {MODULE} {" ".join(args)}', flush=True)
    before = gpu_runs.nvidia_smi_used_mib(gpu)
    with gpu_runs.PeakSampler(lambda: gpu_runs.nvidia_smi_used_mib(gpu)) as s:
      process = gpu_runs.start(MODULE, args, env, log)
      results[name] = gpu_runs.finish(process, log, csv_path)
    outcome = results[name]
    smi[name] = (None if s.peak is None or before is None
                 else s.peak - before)
    print(f'{name}: exit {outcome.returncode}; memory stats '
          f'{outcome.stats}; training {outcome.train_rate} frames/s; GPU '
          f'memory used over the idle GPU {smi[name]} MiB', flush=True)
    if outcome.returncode != 0:
      print(gpu_runs.tail(outcome.output), flush=True)
  table = []
  for name, what, _ in VARIANTS:
    o = results[name]
    stats = o.stats or {}
    smi_bytes = None if smi[name] is None else smi[name] * 2**20
    table.append([what, gpu_runs.gb(stats.get('peak_bytes_in_use')),
                  gpu_runs.gb(stats.get('bytes_limit')),
                  gpu_runs.gb(smi_bytes),
                  'failed' if o.returncode else f'{o.train_rate or 0:,.0f}'])
  print('\n' + '\n'.join(tables.markdown(
      ['JAX memory setting', 'peak bytes in use (JAX)', "JAX's limit",
       'GPU memory used, peak (nvidia-smi)', 'training frames/s'], table,
      'lrrrr')))
  print()
  timing.print_figures(figures(results, smi))
  if any(o.returncode for o in results.values()):
    sys.exit(1)


if __name__ == '__main__':
  flags.DEFINE_integer('num_train_frames', 100_000, 'Training frames of the '
                       'run\'s one iteration.')
  flags.DEFINE_integer('num_eval_frames', 4096, 'Evaluation frames (whole '
                       'episodes are played past them).')
  flags.DEFINE_integer('replay_capacity', 20_000, 'Transitions: full within '
                       'the run.')
  cli.run(main)
