r"""Measure two runs sharing one GPU under the campaign's sharing settings.

  python -m scripts.benchmarks.bench_gpu_sharing [--num_train_frames=100000]

Runs `cr_dqn.run_atari` (gpu_runs: Pong, --num_envs=64, the replay full)
alone on the GPU, then two at once with the variables the campaign gives two
runs on one GPU (scripts.campaign.launch.local_slots). Prints whether both
finished, their training frames/s and JAX's peak bytes in use, and their
total against the run alone; the last line, `figures:`, the figures as JSON.
GPU-only: on any other device it stops with an Error line.
"""

import sys
from typing import Dict, List, Optional, Sequence

from absl import app

from scripts.benchmarks import gpu_runs
from scripts.benchmarks import harness
from scripts.campaign import launch
from zoo.configuration import cli

RUNS_PER_GPU = 2


def shared_environments(gpu: str, environ=None) -> List[Dict[str, str]]:
  """The variables of each of two runs sharing `gpu`, as the campaign sets
  them with --parallel=2 on one GPU."""
  return launch.local_slots(RUNS_PER_GPU, [gpu], environ)


def figures(alone: gpu_runs.Outcome, together: Sequence[gpu_runs.Outcome],
            envs: Sequence[Dict[str, str]]) -> List[Dict[str, str]]:
  """Return the figures (none of what a failed run did not measure)."""
  setting = ', '.join(f'{k}={v}' for k, v in sorted(envs[0].items())
                      if k != 'CUDA_VISIBLE_DEVICES') or 'no variable'
  shared = 'two runs sharing the GPU'
  base = 'Atari Pong, `--num_envs=64`, the replay full'
  both = all(o.returncode == 0 for o in together)
  rates = [o.train_rate for o in together]
  peaks = [(o.stats or {}).get('peak_bytes_in_use') for o in together]
  alone_rate = alone.train_rate if alone.returncode == 0 else None
  out = [harness.figure('gpu.sharing.both_finished', f'two runs on one GPU '
                        f'({setting} each, the campaign\'s setting): both '
                        'finished', 'yes' if both else 'no', '')]
  if alone_rate:
    out.append(harness.figure('gpu.sharing.alone', 'one run alone on the '
                              f'GPU, {base}: training', f'{alone_rate:,.0f}',
                              'frames/s'))
  if both and all(rates):
    out += [harness.figure('gpu.sharing.each', f'{shared}, {base}: training,'
                           ' each', ' / '.join(f'{r:,.0f}' for r in rates),
                           'frames/s'),
            harness.figure('gpu.sharing.total', f'{shared}, {base}: '
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


def _row(label: str, o: gpu_runs.Outcome) -> List[str]:
  peak: Optional[int] = (o.stats or {}).get('peak_bytes_in_use')
  rate = 'failed' if o.returncode else f'{o.train_rate or 0:,.0f}'
  return [label, f'exit {o.returncode}', rate, gpu_runs.gb(peak)]


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  gpu, work = gpu_runs.setup('bench_gpu_sharing')
  sizes = gpu_runs.sizes_from_flags()
  alone = gpu_runs.finish(*gpu_runs.launch(
      work, 'alone', {'CUDA_VISIBLE_DEVICES': gpu}, sizes))
  envs = shared_environments(gpu)
  started = [gpu_runs.launch(work, f'shared_{i + 1}', env, sizes)
             for i, env in enumerate(envs)]
  together = [gpu_runs.finish(*s) for s in started]
  harness.print_table(
      ['run', 'status', 'training frames/s', 'peak bytes in use (JAX)'],
      [_row('alone', alone)] + [_row(f'shared {i + 1} of 2', o)
                                for i, o in enumerate(together)], 'llrr')
  for o in [alone] + together:
    if o.returncode:
      print(gpu_runs.tail(o.output), flush=True)
  print()
  harness.print_figures(figures(alone, together, envs))
  if alone.returncode:
    sys.exit(1)


if __name__ == '__main__':
  gpu_runs.define_flags()
  cli.run(main)
