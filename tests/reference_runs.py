"""Record the reference runs' CSVs (tests/data/reference_runs/README.md).

    python -m tests.reference_runs --output_dir=DIR [--emulated_cpu=MODEL]

runs each tiny seeded run of `RUNS` in `compile_flags.reference_environment()`
and writes DIR/<name>.csv. With --emulated_cpu, each run's Python runs under
QEMU's user-mode emulator as that CPU model (e.g. EPYC-Rome: AVX2 and FMA, no
AVX-512), to check on one machine that the CSVs hold on another kind of CPU.
Each run is pinned to one CPU (on_one_cpu()), so that it computes the same
bits on a machine of any size.
"""

import os
import shutil
import site
import subprocess
import sys
import tempfile
from typing import Dict, List, Optional, Sequence

from absl import app
from absl import flags

from tests import compile_flags

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DATA = os.path.join(REPO, 'tests', 'data', 'reference_runs')

ATARI = ['cr_dqn.run_atari', '--environment_name=pong', '--num_iterations=2',
         '--num_train_frames=2000', '--num_eval_frames=1000',
         '--replay_capacity=5000', '--min_replay_capacity_fraction=0.1',
         '--num_quantiles=11', '--hidden_size=32']
MINATAR = ['cr_dqn.run_minatar', '--environment_name=breakout',
           '--num_iterations=2', '--num_train_frames=1000',
           '--num_eval_frames=500', '--replay_capacity=2000',
           '--min_replay_capacity_fraction=0.1', '--num_quantiles=11',
           '--hidden_size=32', '--target_network_update_period=200']
RUNS = {
    'atari_python': ATARI,
    'minatar_python': MINATAR + ['--loop=python'],
    'minatar_python_k2': MINATAR + ['--loop=python', '--num_envs=2'],
    'minatar_jitted': MINATAR + ['--loop=jitted'],
}
EMULATOR = 'qemu-x86_64'


def command(name: str, results_csv_path: str,
            emulated_cpu: Optional[str] = None) -> List[str]:
  """Return the command line of run `name`, writing `results_csv_path`."""
  python = [sys.executable]
  if emulated_cpu:
    # The emulator runs the interpreter itself, so the virtual environment's
    # packages come through PYTHONPATH (environment()).
    python = [EMULATOR, '-cpu', emulated_cpu, os.path.realpath(sys.executable)]
  return python + ['-m'] + RUNS[name] + [
      f'--results_csv_path={results_csv_path}']


def environment(emulated_cpu: Optional[str] = None) -> Dict[str, str]:
  """Return the environment of a reference run."""
  paths = [REPO] + (site.getsitepackages() if emulated_cpu else [])
  return compile_flags.reference_environment(
      PYTHONPATH=os.pathsep.join(paths))


def on_one_cpu() -> None:
  """Pin this process to one of its CPUs (before the run starts JAX).

  XLA's CPU thread pool takes as many threads as the process has CPUs, and a
  run's last bits depend on it: pinned, a run gives the same CSV on two cores
  or sixty-four. The CPU is chosen by process id, so that runs started side
  by side (the suite's workers) are spread over the CPUs.
  """
  cpus = sorted(os.sched_getaffinity(0))
  os.sched_setaffinity(0, {cpus[os.getpid() % len(cpus)]})


def record(name: str, csv_path: str, emulated_cpu: Optional[str] = None,
           timeout: Optional[float] = None) -> None:
  """Run `name` in a fresh directory and copy its CSV to `csv_path`."""
  with tempfile.TemporaryDirectory() as directory:
    results = os.path.join(directory, 'results.csv')
    run = subprocess.run(command(name, results, emulated_cpu), cwd=REPO,
                         capture_output=True, text=True, timeout=timeout,
                         env=environment(emulated_cpu), preexec_fn=on_one_cpu)
    if run.returncode:
      raise RuntimeError(f'{name} exited {run.returncode}:\n'
                         f'{run.stderr[-3000:]}')
    shutil.copyfile(results, csv_path)


def _define_flags() -> None:
  """Define the tool's flags (not at import: the tests import this module)."""
  flags.DEFINE_string(
      'output_dir', None, 'Directory for the CSVs (tests/data/reference_runs '
      'to record the references).', required=True)
  flags.DEFINE_string(
      'emulated_cpu', None, f"Run under {EMULATOR} as this CPU model "
      "('qemu-x86_64 -cpu help' lists them); unset: this machine's CPU.")
  flags.DEFINE_list('runs', sorted(RUNS), 'The runs to record.')


def main(argv: Sequence[str]) -> None:
  del argv
  output_dir, emulated_cpu = flags.FLAGS.output_dir, flags.FLAGS.emulated_cpu
  unknown = sorted(set(flags.FLAGS.runs) - set(RUNS))
  if unknown:
    sys.exit(f'Error: unknown runs {unknown}; choose among {sorted(RUNS)}.')
  if emulated_cpu and not shutil.which(EMULATOR):
    sys.exit(f'Error: {EMULATOR} is not installed; on Debian: '
             'apt-get install qemu-user.')
  os.makedirs(output_dir, exist_ok=True)
  for name in flags.FLAGS.runs:
    path = os.path.join(output_dir, name + '.csv')
    print(f'{name}: running ...', flush=True)
    try:
      record(name, path, emulated_cpu)
    except RuntimeError as error:
      sys.exit(f'Error: {error}')
    print(f'{name}: wrote {path}', flush=True)


if __name__ == '__main__':
  _define_flags()
  app.run(main)
