"""Measure a checkpoint's time and bytes per iteration: whole replay vs chunks.

  python -m scripts.benchmarks.bench_checkpoint [--replay_capacity=1000000]
      [--steps_per_iteration=250000] [--num_streams=1] [--repeats=3]
      [--output_dir=/tmp/bench_checkpoint]

A full replay that receives one iteration's steps each round is checkpointed
by both formats: "whole replay" rewrites the replay's arrays every time, then
deletes the previous checkpoint; "chunks" (zoo.storage.checkpoint.save)
writes only the steps added since, keeps the previous checkpoint and deletes
older ones first. Both write the same agent state (`--state_mb`, CR-DQN's
size) and fsync everything. Per format: a checkpoint's wall time, the bytes
it wrote (/proc/self/io wchar), and the disk it holds after and at most. The
last line, `figures:`, holds the figures as JSON.
"""

import json
import os
import shutil
import time

from absl import app
from absl import flags
import numpy as np

from scripts.benchmarks import harness
from zoo.storage import checkpoint
from zoo.storage import files
from zoo.replay import frame_replay as replay_lib
from zoo.configuration import cli

FLAGS = flags.FLAGS


def _written_bytes() -> int:
  with open('/proc/self/io') as f:
    return int(dict(line.split(': ') for line in f.read().splitlines())
               ['wchar'])


def _disk_bytes(directory: str) -> int:
  return sum(os.path.getsize(os.path.join(root, name))
             for root, _, names in os.walk(directory) for name in names)


def save_whole_replay(directory: str, iteration: int, tree, replay) -> None:
  """Checkpoint as before chunks: the replay's filled slots, every time."""
  os.makedirs(directory, exist_ok=True)
  final = os.path.join(directory, f'iteration_{iteration:06d}')
  temp = os.path.join(directory, f'.tmp-iteration_{iteration:06d}')
  os.makedirs(temp)
  with open(os.path.join(temp, 'tree.npz'), 'wb') as f:
    np.savez(f, *tree.values())
    f.flush()
    os.fsync(f.fileno())
  # The replay's whole arrays, as its get_state returned them then.
  arrays = replay._arrays()  # pylint: disable=protected-access
  for name, array in arrays.items():
    with open(os.path.join(temp, f'{name}.npy'), 'wb') as f:
      np.save(f, array, allow_pickle=False)
      f.flush()
      os.fsync(f.fileno())
  with open(os.path.join(temp, 'meta.json'), 'w') as f:
    json.dump(replay.get_state(), f)
    f.flush()
    os.fsync(f.fileno())
  files.fsync_path(temp)
  os.rename(temp, final)
  files.fsync_path(directory)
  for name in os.listdir(directory):
    if name != os.path.basename(final):
      shutil.rmtree(os.path.join(directory, name))


def _add_iteration(replay, steps: int, value: int) -> None:
  """Advance the replay by `steps` steps of constant content (cheap)."""
  begin = replay.num_steps
  k = replay.num_streams
  block = 10_000
  for first in range(begin, begin + steps, block):
    n = min(block, begin + steps - first)
    replay.put_steps(first, {
        'frames': np.full((k, n, 84, 84), value, np.uint8),
        'actions': np.zeros((k, n), np.int32),
        'rewards': np.zeros((k, n), np.float32),
        'discounts': np.ones((k, n), np.float32),
        'episode_steps': np.ones((k, n), np.int32)})
  state = replay.get_state()
  state['num_added'] = [begin + steps] * k
  replay.set_state(state)


def main(argv):
  del argv
  capacity, k = FLAGS.replay_capacity, FLAGS.num_streams
  steps = FLAGS.steps_per_iteration // k  # Per stream.
  if capacity <= 0 or k <= 0 or capacity % k or steps <= 0:
    raise app.UsageError('--replay_capacity, --num_streams and '
                         '--steps_per_iteration must be positive, the '
                         'capacity a multiple of the streams.')
  out = FLAGS.output_dir
  free = shutil.disk_usage(os.path.dirname(os.path.abspath(out)) or '.').free
  needed = 3 * replay_lib.replay_bytes(capacity)
  if free < needed:
    raise app.UsageError(f'{out} needs {needed / 1e9:.1f} GB free (two '
                         f'formats side by side), has {free / 1e9:.1f} GB.')
  shutil.rmtree(out, ignore_errors=True)
  replay = replay_lib.FrameReplay(capacity, k, seed=0)
  state_floats = FLAGS.state_mb * 10**6 // 16
  tree = {name: np.ones(state_floats, np.float32)
          for name in ('params', 'target_params', 'adam_mu', 'adam_nu')}
  whole_dir, chunk_dir = f'{out}/whole_replay', f'{out}/chunks'
  # Fill the replay as a run does, one iteration and chunk at a time; the
  # whole-replay format's previous checkpoint is the last of these.
  warm_up = -(-capacity // k // steps)
  for iteration in range(warm_up):
    _add_iteration(replay, steps, 1)
    end = replay.num_steps
    checkpoint.save(chunk_dir, iteration, {}, tree,
                    replay.steps(max(end - steps, end - capacity // k, 0),
                                 end),
                    keep_steps_from=max(end - capacity // k, 0))
  save_whole_replay(whole_dir, warm_up - 1, tree, replay)
  print(f'replay: {capacity:,} transitions in {k} stream(s), '
        f'{replay.nbytes / 1e9:.2f} GB; each iteration adds '
        f'{steps * k:,} steps ({replay_lib.replay_bytes(steps * k) / 1e9:.2f}'
        f' GB); agent state {4 * state_floats * 4 / 1e6:.0f} MB', flush=True)

  def checkpoint_round(directory, save):
    def measure_one():
      before_disk = _disk_bytes(directory)
      written = _written_bytes()
      start = time.perf_counter()
      save(directory, iteration[0])
      seconds = time.perf_counter() - start
      written = _written_bytes() - written
      # Everything written lands before anything old is deleted.
      return {'seconds': seconds, 'written': written,
              'after': _disk_bytes(directory), 'peak': before_disk + written}
    return measure_one

  def save_chunks(directory, iteration):
    end = replay.num_steps
    checkpoint.save(directory, iteration, {}, tree,
                    replay.steps(end - steps, end),
                    keep_steps_from=end - capacity // k)

  iteration = [warm_up - 1]

  def next_iteration(r):  # Each round, the replay receives one iteration.
    iteration[0] = warm_up + r
    _add_iteration(replay, steps, 1 + iteration[0] % 250)

  results = harness.medians(harness.measure(
      {'whole replay': checkpoint_round(
          whole_dir, lambda d, i: save_whole_replay(d, i, tree, replay)),
       'chunks': checkpoint_round(chunk_dir, save_chunks)},
      FLAGS.repeats, lambda line: harness.say(line + ' s'), next_iteration))
  shutil.rmtree(out, ignore_errors=True)
  columns = {'seconds per iteration': ('seconds', 's'),
             'GB written per iteration': ('written', 'GB'),
             'GB on disk after': ('disk_after', 'GB'),
             'GB on disk at most': ('disk_at_most', 'GB')}
  figures = harness.report(
      'checkpoint.bench_checkpoint',
      f'a checkpoint per iteration of {steps * k:,} steps, replay of '
      f'{capacity:,} transitions in {k} stream(s)', ['checkpoint format'],
      columns, {name: dict(zip(columns, (
          f'{r["seconds"]:.1f}', f'{r["written"] / 1e9:.2f}',
          f'{r["after"] / 1e9:.2f}', f'{r["peak"] / 1e9:.2f}')))
                for name, r in results.items()})
  seconds = {name: r['seconds'] for name, r in results.items()}
  ratio = f"{seconds['whole replay'] / seconds['chunks']:.1f}"
  print(f'chunks are {ratio}x faster per iteration')
  harness.print_figures(figures + [harness.figure(
      'checkpoint.bench_checkpoint.chunks_speedup', 'a checkpoint per '
      'iteration: the whole replay\'s seconds over the chunks\'', ratio,
      'x')])


if __name__ == '__main__':
  flags.DEFINE_integer('replay_capacity', 1_000_000, 'Transitions in all.')
  flags.DEFINE_integer('steps_per_iteration', 250_000,
                       'Steps an iteration adds (all streams).')
  flags.DEFINE_integer('num_streams', 1, 'Streams (K).')
  flags.DEFINE_integer('state_mb', 56, 'Agent state size in MB.')
  flags.DEFINE_string('output_dir', '/tmp/bench_checkpoint',
                      'Scratch directory (deleted at the end).')
  harness.define_flags(repeats=3)
  cli.run(main)
