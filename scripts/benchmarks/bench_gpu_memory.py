r"""Measure a run's GPU memory with and without JAX's preallocation.

  python -m scripts.benchmarks.bench_gpu_memory [--num_train_frames=100000]

Runs `cr_dqn.run_atari` (gpu_runs: Pong, --num_envs=64, the replay full, in
host RAM) in a child process as JAX starts by default (75% of the GPU at
once), then with XLA_PYTHON_CLIENT_PREALLOCATE=false. Prints each one's JAX
memory statistics at exit and nvidia-smi's peak memory.used (the CUDA context
included); the last line, `figures:`, the figures as JSON. GPU-only: on any
other device it stops with an Error line.
"""

import sys
from typing import Any, Dict, List

from absl import app

from scripts.benchmarks import gpu_runs
from scripts.benchmarks import harness
from zoo.configuration import cli

# (name, what, the run's own variables).
VARIANTS = (
    ('preallocated', 'JAX\'s default (preallocation)', {}),
    ('on_demand', 'XLA_PYTHON_CLIENT_PREALLOCATE=false',
     {'XLA_PYTHON_CLIENT_PREALLOCATE': 'false'}),
)


def figures(results: Dict[str, gpu_runs.Outcome],
            smi_mib: Dict[str, Any]) -> List[Dict[str, str]]:
  """Return the figures of the variants run (none of a failed run)."""
  out = []
  for name, what, _ in VARIANTS:
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
            f'gpu.memory.{name}.{quantity}', 'one run, Atari Pong, '
            f'`--num_envs=64`, the replay full (in host RAM), {what}: '
            f'{measured}', f'{value / 1e9:.2f}', 'GB'))
  return out


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  gpu, work = gpu_runs.setup('bench_gpu_memory')
  results, smi = {}, {}
  for name, what, env in VARIANTS:
    print(f'{name}: {what}', flush=True)
    before = gpu_runs.nvidia_smi_used_mib(gpu)
    with gpu_runs.PeakSampler(lambda: gpu_runs.nvidia_smi_used_mib(gpu)) as s:
      outcome = results[name] = gpu_runs.finish(
          *gpu_runs.launch(work, name, env,
                          gpu_runs.sizes_from_flags()))
    smi[name] = (None if s.peak is None or before is None
                 else s.peak - before)
    print(f'{name}: exit {outcome.returncode}; memory stats '
          f'{outcome.stats}; training {outcome.train_rate} frames/s; GPU '
          f'memory used over the idle GPU {smi[name]} MiB', flush=True)
    if outcome.returncode != 0:
      print(gpu_runs.tail(outcome.output), flush=True)
  table = []
  for name, what, _ in VARIANTS:
    o, stats = results[name], results[name].stats or {}
    table.append([what, gpu_runs.gb(stats.get('peak_bytes_in_use')),
                  gpu_runs.gb(stats.get('bytes_limit')),
                  gpu_runs.gb(None if smi[name] is None else
                              smi[name] * 2**20),
                  'failed' if o.returncode else f'{o.train_rate or 0:,.0f}'])
  harness.print_table(
      ['JAX memory setting', 'peak bytes in use (JAX)', "JAX's limit",
       'GPU memory used, peak (nvidia-smi)', 'training frames/s'], table,
      'lrrrr')
  print()
  harness.print_figures(figures(results, smi))
  if any(o.returncode for o in results.values()):
    sys.exit(1)


if __name__ == '__main__':
  gpu_runs.define_flags()
  cli.run(main)
