r"""Measure two runs sharing one GPU under the campaign's sharing settings.

  python -m scripts.benchmarks.bench_gpu_sharing [--num_train_frames=100000]

Runs `cr_dqn.run_atari` (Pong, --num_envs=64, one iteration, the replay full)
alone on the GPU, then two at once on the same GPU with the environment the
campaign gives two runs on one GPU (scripts.campaign.launch.local_slots:
CUDA_VISIBLE_DEVICES and XLA_PYTHON_CLIENT_MEM_FRACTION=0.45 each). Prints
whether both finished, each one's training frames/s and JAX's peak bytes in
use, and their total against the run alone. The last line, `figures:`, holds
the figures as JSON, for a record.

GPU-only: on any other device it stops with an Error line.
"""

import os
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

from absl import app
from absl import flags

from scripts.analysis import tables
from scripts.benchmarks import gpu_runs
from scripts.benchmarks import timing
from scripts.campaign import launch
from zoo.configuration import cli

FLAGS = flags.FLAGS
MODULE = 'cr_dqn.run_atari'
RUNS_PER_GPU = 2


def shared_environments(gpu: str, environ=None) -> List[Dict[str, str]]:
  """The variables of each of two runs sharing `gpu`, as the campaign sets
  them with --parallel=2 on one GPU."""
  return launch.local_slots(RUNS_PER_GPU, [gpu], environ)


def figures(alone: gpu_runs.Outcome, together: Sequence[gpu_runs.Outcome],
            envs: Sequence[Dict[str, str]]) -> List[Dict[str, str]]:
  """Return the figure rows (key, what, value, unit)."""
  setting = ', '.join(f'{k}={v}' for k, v in sorted(envs[0].items())
                      if k != 'CUDA_VISIBLE_DEVICES') or 'no variable'
  base = 'Atari Pong, `--num_envs=64`, the replay full'
  both = all(o.returncode == 0 for o in together)
  rows = [{'key': 'gpu.sharing.both_finished',
           'what': f'two runs on one GPU ({setting} each, the campaign\'s '
                   f'setting): both finished',
           'value': 'yes' if both else 'no', 'unit': ''}]
  if alone.returncode == 0 and alone.train_rate:
    rows.append({'key': 'gpu.sharing.alone',
                 'what': f'one run alone on the GPU, {base}: training',
                 'value': f'{alone.train_rate:,.0f}', 'unit': 'frames/s'})
  rates = [o.train_rate for o in together]
  if both and all(rates):
    rows.append({'key': 'gpu.sharing.each',
                 'what': f'two runs sharing the GPU, {base}: training, each',
                 'value': ' / '.join(f'{r:,.0f}' for r in rates),
                 'unit': 'frames/s'})
    rows.append({'key': 'gpu.sharing.total',
                 'what': f'two runs sharing the GPU, {base}: training, both '
                         'together',
                 'value': f'{sum(rates):,.0f}', 'unit': 'frames/s'})
    if alone.returncode == 0 and alone.train_rate:
      rows.append({'key': 'gpu.sharing.gain',
                   'what': 'two runs sharing the GPU: their total over one '
                           'run alone',
                   'value': f'{sum(rates) / alone.train_rate:.2f}',
                   'unit': '×'})
  peaks = [(o.stats or {}).get('peak_bytes_in_use') for o in together]
  if both and all(p is not None for p in peaks):
    rows.append({'key': 'gpu.sharing.peak_in_use',
                 'what': 'two runs sharing the GPU: JAX\'s peak bytes in use, '
                         'each',
                 'value': ' / '.join(f'{p / 1e9:.2f}' for p in peaks),
                 'unit': 'GB'})
  return rows


def _row(label: str, o: gpu_runs.Outcome) -> List[str]:
  peak: Optional[int] = (o.stats or {}).get('peak_bytes_in_use')
  rate = 'failed' if o.returncode else f'{o.train_rate or 0:,.0f}'
  return [label, f'exit {o.returncode}', rate, gpu_runs.gb(peak)]


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  try:
    gpu_runs.require_gpu()
  except ValueError as e:
    sys.exit(f'Error: {e}')
  gpu = gpu_runs.visible_gpu()
  work = tempfile.mkdtemp(prefix='bench_gpu_sharing-')

  def launch(name: str, env: Dict[str, str]):
    csv_path = os.path.join(work, name, 'results.csv')
    os.makedirs(os.path.dirname(csv_path))
    log = os.path.join(work, f'{name}.log')
    args = gpu_runs.run_argv(csv_path, FLAGS.num_train_frames,
                             FLAGS.num_eval_frames, FLAGS.replay_capacity)
    print(f'{name}: {" ".join(f"{k}={v}" for k, v in sorted(env.items()))} '
          f'python -m {MODULE} {" ".join(args)}', flush=True)
    return gpu_runs.start(MODULE, args, env, log), log, csv_path

  alone = gpu_runs.finish(*launch('alone', {'CUDA_VISIBLE_DEVICES': gpu}))
  envs = shared_environments(gpu)
  started = [launch(f'shared_{i + 1}', env) for i, env in enumerate(envs)]
  together = [gpu_runs.finish(*s) for s in started]
  print('\n' + '\n'.join(tables.markdown(
      ['run', 'status', 'training frames/s', 'peak bytes in use (JAX)'],
      [_row('alone', alone)] + [_row(f'shared {i + 1} of 2', o)
                                for i, o in enumerate(together)], 'llrr')))
  for o in [alone] + together:
    if o.returncode:
      print(gpu_runs.tail(o.output), flush=True)
  print()
  timing.print_figures(figures(alone, together, envs))
  if alone.returncode:
    sys.exit(1)


if __name__ == '__main__':
  flags.DEFINE_integer('num_train_frames', 100_000, 'Training frames of each '
                       'run\'s one iteration.')
  flags.DEFINE_integer('num_eval_frames', 4096, 'Evaluation frames (whole '
                       'episodes are played past them).')
  flags.DEFINE_integer('replay_capacity', 20_000, 'Transitions: full within '
                       'the run.')
  cli.run(main)
