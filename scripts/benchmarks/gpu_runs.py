"""Short Atari runs in child processes, with their GPU memory and speed.

What bench_gpu_memory and bench_gpu_sharing share: the run's command line
(`cr_dqn.run_atari`, Pong, `--num_envs=64`, a replay small enough to be full
within the run), a child program that runs it and prints JAX's memory
statistics of the device at its exit, a sampler of nvidia-smi's memory.used,
the run's training rate read back from its CSV, and their flags.
"""

import dataclasses
import json
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from typing import Callable, Dict, List, Optional, Sequence, Tuple

from absl import flags

from scripts.analysis import run_data

MODULE = 'cr_dqn.run_atari'
# The run: Pong's episodes end even untrained (a stuck game would make the
# evaluation's whole episodes long); 64 streams, the mode a campaign uses.
GAME = 'pong'
NUM_ENVS = 64
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


def define_flags() -> None:
  """Define the flags of the measured run (only when run)."""
  flags.DEFINE_integer('num_train_frames', 100_000, 'Training frames of '
                       'each run\'s one iteration.')
  flags.DEFINE_integer('num_eval_frames', 4096, 'Evaluation frames (whole '
                       'episodes are played past them).')
  flags.DEFINE_integer('replay_capacity', 20_000, 'Transitions: full within '
                       'the run.')


def setup(name: str) -> Tuple[str, str]:
  """Return the GPU the runs get and a scratch directory; exit with one
  Error line unless JAX's device is a GPU."""
  try:
    require_gpu()
  except ValueError as e:
    sys.exit(f'Error: {e}')
  return visible_gpu(), tempfile.mkdtemp(prefix=f'{name}-')


def launch(work: str, name: str, env: Dict[str, str], sizes: Sequence[int],
           module: str = MODULE) -> Tuple[subprocess.Popen, str, str]:
  """Start the measured run as `name` under `work`, with the variables `env`
  and sizes (training frames, evaluation frames, replay capacity); return it,
  its log and its CSV (for finish)."""
  csv_path = os.path.join(work, name, 'results.csv')
  os.makedirs(os.path.dirname(csv_path))
  log = os.path.join(work, f'{name}.log')
  args = run_argv(csv_path, *sizes)
  print(f'{name}: {" ".join(f"{k}={v}" for k, v in sorted(env.items()))} '
        f'python -m {module} {" ".join(args)}', flush=True)
  return start(module, args, env, log), log, csv_path


def sizes_from_flags() -> Tuple[int, int, int]:
  """Return the measured run's sizes set by define_flags' flags."""
  f = flags.FLAGS
  return f.num_train_frames, f.num_eval_frames, f.replay_capacity


def child_command(module: str, args: Sequence[str],
                  python: str = sys.executable) -> List[str]:
  """Return the command that runs `python -m module args` and reports."""
  return [python, '-c', CHILD.format(prefix=STATS_PREFIX, stats=STATS,
                                     module=module, args=list(args))]


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


class PeakSampler:
  """Samples a reading (nvidia-smi's memory.used) in a thread; keeps the
  peak. `read` returns None when it cannot read: the peak stays None."""

  def __init__(self, read: Callable[[], Optional[float]],
               interval_s: float = 0.5):
    self._read, self._interval = read, interval_s
    self._stop = threading.Event()
    self.peak: Optional[float] = None
    self._thread = threading.Thread(target=self._loop, daemon=True)

  def _loop(self) -> None:
    while True:
      value = self._read()
      if value is not None:
        self.peak = value if self.peak is None else max(self.peak, value)
      if self._stop.wait(self._interval):
        return

  def __enter__(self) -> 'PeakSampler':
    self._thread.start()
    return self

  def __exit__(self, *exc) -> None:
    self._stop.set()
    self._thread.join()


@dataclasses.dataclass
class Outcome:
  """One child run: its exit status, output, memory statistics and rate."""
  returncode: int
  output: str
  stats: Optional[Dict[str, int]]
  train_rate: Optional[float]


def start(module: str, args: Sequence[str], env: Dict[str, str],
          log_path: str) -> subprocess.Popen:
  """Start a child run, its output into log_path."""
  with open(log_path, 'w') as log:  # The child keeps its own handle.
    return subprocess.Popen(child_command(module, args), stdout=log,
                            stderr=subprocess.STDOUT,
                            env=dict(os.environ, **env),
                            stdin=subprocess.DEVNULL)


def finish(process: subprocess.Popen, log_path: str,
           results_csv: str) -> Outcome:
  """Wait for a child run; return what it did."""
  returncode = process.wait()
  with open(log_path, errors='replace') as f:
    output = f.read()
  return Outcome(returncode, output, parse_stats(output),
                 train_rate(results_csv))


def visible_gpu(environ=None) -> str:
  """The GPU the runs get: the first of CUDA_VISIBLE_DEVICES, else '0'."""
  environ = os.environ if environ is None else environ
  visible = environ.get('CUDA_VISIBLE_DEVICES', '').split(',')[0].strip()
  return visible or '0'


def require_gpu() -> str:
  """Return JAX's first device's platform; raise ValueError unless a GPU."""
  import jax  # pylint: disable=g-import-not-at-top
  platform = jax.devices()[0].platform
  if platform != 'gpu':
    raise ValueError(f'this benchmark measures a GPU, and JAX\'s device here '
                     f'is {platform}. Run it on a machine with a GPU (and a '
                     'CUDA build of JAX).')
  return platform


def gb(value: Optional[float], scale: float = 1e9) -> str:
  return 'n/a' if value is None else f'{value / scale:.2f} GB'


def tail(text: str, lines: int = 5) -> str:
  return '\n'.join(text.strip().splitlines()[-lines:])
