"""Start a campaign's runs: locally over the GPUs, on Ray, or as a SLURM array.

Every backend runs each run through execute(): its command in its own
session, its output appended to run.log, exit.json written at its end, and
SIGTERM at the campaign's deadline (scripts.campaign.budget).
"""

import concurrent.futures
import json
import os
import queue
import shlex
import shutil
import socket
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence

from scripts.campaign import budget
from scripts.campaign import run_record as run_lib
from scripts.campaign import status
from zoo.storage import files

# Of a shared GPU, what the runs' JAX pools take together; the rest is left
# to each process's CUDA context (JAX alone takes 0.75 of a GPU at its start).
GPU_MEMORY_HEADROOM = 0.9
JAX_MEMORY_VARIABLES = ('XLA_PYTHON_CLIENT_MEM_FRACTION',
                        'XLA_PYTHON_CLIENT_PREALLOCATE',
                        'XLA_PYTHON_CLIENT_ALLOCATOR')
NO_DEADLINE = budget.Deadline(None)
_stopping = threading.Event()  # Set on Ctrl-C / SIGTERM of the campaign.


def execute(run: run_lib.Run, root: str, env: Dict[str, str] = None,
            deadline: budget.Deadline = NO_DEADLINE, poll_s: float = 1.0,
            python: str = sys.executable) -> Optional[int]:
  """Run one run to its end or the deadline; return its exit status.

  None: not started (the deadline passed, the campaign is stopping, or the
  run is done or running: another invocation may have taken it since this
  one's plan).
  """
  if deadline.passed() or _stopping.is_set():
    return None
  if status.of(run, root).state in (status.DONE, status.RUNNING):
    return None
  home = run.home(root)
  os.makedirs(home, exist_ok=True)
  exit_path = os.path.join(home, run_lib.EXIT_FILE)
  if os.path.exists(exit_path):
    os.remove(exit_path)
  command = run.command(root, python)
  env = dict(env or {})
  with open(os.path.join(home, run_lib.LOG_FILE), 'a') as log:
    log.write(f'=== {time.strftime("%Y-%m-%d %H:%M:%S")} on '
              f'{socket.gethostname()}: '
              + ''.join(f'{k}={shlex.quote(v)} ' for k, v in env.items())
              + shlex.join(command) + '\n')
    log.flush()
    # Own session: a terminal's Ctrl-C reaches the campaign only, which
    # then stops its runs at a safe point.
    child = subprocess.Popen(command, stdout=log, stderr=subprocess.STDOUT,
                             stdin=subprocess.DEVNULL, start_new_session=True,
                             env=dict(os.environ, **env))
    while child.poll() is None:
      if deadline.passed() or _stopping.is_set():
        budget.stop(child)
        break
      time.sleep(min(poll_s, max(deadline.left(), 0.01)))
  files.write_atomically(exit_path, json.dumps(
      {'returncode': child.returncode, 'finished': time.time(),
       'host': socket.gethostname()}))
  return child.returncode


def visible_gpus(gpus: str = 'auto', environ=None, which=shutil.which,
                 run=subprocess.run) -> List[str]:
  """Return the GPUs to spread local runs over.

  gpus: 'auto' (CUDA_VISIBLE_DEVICES, else nvidia-smi's, else none), 'none'
  (leave the runs' environment alone) or a comma-separated list of ids.
  """
  environ = os.environ if environ is None else environ
  if gpus.strip() in ('', 'none'):
    return []
  if gpus.strip() != 'auto':
    return [g.strip() for g in gpus.split(',') if g.strip()]
  if 'CUDA_VISIBLE_DEVICES' in environ:
    return [g.strip() for g in environ['CUDA_VISIBLE_DEVICES'].split(',')
            if g.strip() and g.strip() != '-1']
  if not which('nvidia-smi'):
    return []
  try:
    listed = run(['nvidia-smi', '--query-gpu=index', '--format=csv,noheader'],
                 capture_output=True, text=True, timeout=60, check=False)
  except (OSError, subprocess.SubprocessError):
    return []
  return ([line.strip() for line in listed.stdout.splitlines()
           if line.strip()] if listed.returncode == 0 else [])


def memory_environment(share: float, environ=None) -> Dict[str, str]:
  """JAX's memory setting for a run on `share` of a GPU (none if set)."""
  environ = os.environ if environ is None else environ
  if share >= 1 or share <= 0 or any(v in environ
                                     for v in JAX_MEMORY_VARIABLES):
    return {}
  return {'XLA_PYTHON_CLIENT_MEM_FRACTION':
          f'{GPU_MEMORY_HEADROOM * share:.3g}'}


def local_slots(parallel: int, gpus: Sequence[str], environ=None
                ) -> List[Dict[str, str]]:
  """Return the environment of each of the `parallel` local slots: slot i on
  GPU i mod G, sharing its memory with the other slots there."""
  if not gpus:
    return [{} for _ in range(parallel)]
  memory = memory_environment(1 / -(-parallel // len(gpus)), environ)
  return [dict(CUDA_VISIBLE_DEVICES=gpus[i % len(gpus)], **memory)
          for i in range(parallel)]


def run_local(runs: Sequence[run_lib.Run], root: str, parallel: int,
              gpus: Sequence[str] = (),
              deadline: budget.Deadline = NO_DEADLINE, say=print,
              poll_s: float = 1.0) -> Dict[str, Optional[int]]:
  """Run at most `parallel` at once; return {run name: exit status}."""
  if parallel < 1:
    raise ValueError(f'--parallel must be >= 1, got {parallel}.')
  _stopping.clear()
  slots = local_slots(parallel, gpus)
  free = queue.Queue()
  for slot in slots:
    free.put(slot)

  def in_slot(run):
    slot = free.get()
    try:
      if slot and not _stopping.is_set():
        say(f'{run.name}: GPU {slot["CUDA_VISIBLE_DEVICES"]}')
      return execute(run, root, slot, deadline, poll_s)
    finally:
      free.put(slot)

  results = {}
  with concurrent.futures.ThreadPoolExecutor(parallel) as executor:
    futures = {executor.submit(in_slot, run): run for run in runs}
    try:
      for future in concurrent.futures.as_completed(futures):
        run = futures[future]
        results[run.name] = code = future.result()
        say(f'[{len(results)}/{len(runs)}] {run.name}: ' +
            (f'not started ({status.of(run, root).state})' if code is None
             else f'exit {code}'))
    except KeyboardInterrupt:
      say('Stopping the runs at a safe point; rerun to resume them.')
      _stopping.set()
      raise
  return results


def run_ray(runs: Sequence[run_lib.Run], root: str, address: str,
            cpus_per_run: float, gpus_per_run: float,
            deadline: budget.Deadline = NO_DEADLINE,
            say=print) -> Dict[str, Optional[int]]:
  """Run one Ray task per run; return {run name: exit status}."""
  try:
    import ray  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError(
        "--backend=ray needs Ray: pip install '.[ray]'.") from None
  ray.init(address=address)
  from scripts.campaign import launch  # pylint: disable=g-import-not-at-top
  task = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus_per_run)(
      launch.execute)
  memory = memory_environment(gpus_per_run)
  pending = {task.remote(run, os.path.abspath(root), memory, deadline): run
             for run in runs}
  results = {}
  while pending:
    ready, _ = ray.wait(list(pending), num_returns=1)
    for ref in ready:
      run = pending.pop(ref)
      try:
        results[run.name] = ray.get(ref)
      except Exception as e:  # pylint: disable=broad-except
        say(f'{run.name}: Ray task failed: {e}')  # Its node was lost.
        results[run.name] = -1
      say(f'[{len(results)}/{len(runs)}] {run.name}: exit '
          f'{results[run.name]}')
  return results


def slurm_script(name: str, root: str, num_runs: int, parallel: int,
                 options: Sequence[str], argv: Sequence[str]) -> str:
  """Write the campaign's SLURM array script; return its path.

  Array task i runs the campaign's run i (`--run_index`), skipping it when
  done; argv: this command's flags, passed on to every task.
  """
  root = os.path.abspath(root)
  path = os.path.join(root, 'slurm', f'{os.path.basename(name)}.sbatch')
  os.makedirs(os.path.dirname(path), exist_ok=True)
  passed = [a for a in argv if not a.startswith(
      ('--backend', '--parallel', '--slurm_option', '--root_dir', '--dry_run',
       '--nodry_run'))]
  lines = ['#!/bin/bash',
           f'#SBATCH --job-name=campaign-{os.path.basename(name)}',
           f'#SBATCH --array=0-{num_runs - 1}%{parallel}',
           f'#SBATCH --output={root}/slurm/%A_%a.out']
  lines += [f'#SBATCH {option}' for option in options]
  lines += [f'cd {shlex.quote(os.getcwd())}',
            shlex.join([sys.executable, '-m', 'scripts.campaign', *passed,
                        f'--root_dir={root}'])
            + ' --run_index="$SLURM_ARRAY_TASK_ID"', '']
  files.write_atomically(path, '\n'.join(lines))
  return path
