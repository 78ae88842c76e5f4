"""Measure the replay's resident memory when full, and its sampling time.

  python -m scripts.benchmarks.bench_replay [--replay_capacity=1000000]
      [--num_streams=16] [--repeats=200]

Fills a FrameReplay to capacity with random frames (as K streams of one long
episode) and prints the process's resident memory next to the arrays' exact
size, then the median time of sample(32) for both stack layouts (in turns,
--repeats rounds). The last line, `figures:`, holds the figures as JSON.
"""

import time

from absl import app
from absl import flags
import numpy as np

from scripts.benchmarks import harness
from zoo.configuration import cli
from zoo.replay import frame_replay as replay_lib

FLAGS = flags.FLAGS


def main(argv):
  del argv
  capacity, k = FLAGS.replay_capacity, FLAGS.num_streams
  if capacity <= 0 or k <= 0 or capacity % k:
    raise app.UsageError('--replay_capacity and --num_streams must be positive'
                         ' and the capacity a multiple of the streams.')
  replay = replay_lib.FrameReplay(capacity=capacity, num_streams=k, seed=0)
  arrays_gb = f'{replay.nbytes / 1e9:.2f}'
  print(f'allocated: resident {harness.rss_bytes() / 1e9:.2f} GB; replay '
        f'arrays {arrays_gb} GB')
  rng = np.random.default_rng(0)
  observation = rng.integers(0, 256, (k, 84, 84, 4), dtype=np.uint8)
  zeros, ones = np.zeros(k, np.int32), np.ones(k, np.float32)
  start = time.perf_counter()
  for i in range(capacity // k + 1):
    step_type = np.full(k, 0 if i == 0 else 1, np.int8)
    replay.add(step_type, observation, zeros, zeros.astype(np.float32), ones)
  full_gb = f'{harness.rss_bytes() / 1e9:.2f}'
  print(f'filled {replay.size} transitions in '
        f'{time.perf_counter() - start:.1f} s: resident {full_gb} GB')
  what = f'FrameReplay of {capacity:,} transitions in {k} streams'
  results = harness.medians(harness.measure({
      f'stacks_last={layout}': harness.timed(
          lambda layout=layout: replay.sample(32, stacks_last=layout))
      for layout in (True, False)}, FLAGS.repeats))
  harness.print_figures([
      harness.figure('replay.bench_replay.arrays', f'{what}: its arrays',
                     arrays_gb, 'GB'),
      harness.figure('replay.bench_replay.resident_full',
                     f'{what}, full: the process\'s resident memory', full_gb,
                     'GB')] + harness.report(
                         'replay.bench_replay', what, ['layout'],
                         {'sample(32) ms': ('sample_32', 'ms')},
                         {name: {'sample(32) ms': f'{r[harness.VALUE]:.3f}'}
                          for name, r in results.items()}, 'lr'))


if __name__ == '__main__':
  flags.DEFINE_integer('replay_capacity', 1_000_000, 'Transitions in all.')
  flags.DEFINE_integer('num_streams', 16, 'Streams (K).')
  harness.define_flags(repeats=200)
  cli.run(main)
