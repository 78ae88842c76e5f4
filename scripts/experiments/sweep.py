r"""Run agents x games x seeds, locally in parallel or on a Ray cluster; resumable.

  python -m scripts.experiments.sweep --agents=cr_dqn,qr_dqn --games=pong,breakout --seeds=1,2,3 \
      --root_dir=runs --parallel=2 --flags='--num_iterations=2 --num_train_frames=400'
  python -m scripts.experiments.sweep --status --root_dir=runs
  python -m scripts.experiments.sweep --suite=minatar --agents=cr_dqn --games=all --seeds=1,2,3 \
      --root_dir=runs/minatar --parallel=2
  python -m scripts.experiments.sweep --agents=cr_dqn --games=all --seeds=1,2,3 --root_dir=/nfs/runs \
      --ray_address=auto --cpus_per_run=4 --gpus_per_run=1

Each run lives in --root_dir/<agent>/<game>/seed_<s>/: results.csv, checkpoints/,
run.log (appended per attempt), run.lock (zoo.storage.run_directory's lock, held while
it runs), exit.json (last exit status) and sweep.json (its command and
num_iterations). It is executed as
  python -m <agent>.run_atari --environment_name=<game> --seed=<s>
      --results_csv_path=.../results.csv --checkpoint_dir=.../checkpoints <--flags>
(`<agent>.run_minatar` with --suite=minatar, whose games are MinAtar's five
and whose complete runs have MinAtar's --num_iterations default). Before
anything starts, the sweep checks its agents, games and seeds and every run's
settings: --flags parsed and validated as the run itself does first (the
run's own probes of its disk and device stay with the run); bad input ends
the sweep with one `Error:` line naming the fix. Relaunching the same sweep
skips finished runs (CSV holds iterations 0..num_iterations), skips running
ones (a held run.lock), and restarts the others, which resume from their
checkpoint directory. With --ray_address, each run is one Ray task declaring
--cpus_per_run/--gpus_per_run, and --root_dir must be on a file system shared
by every node. Ray is optional: pip install '.[sweep]'.

GPUs. Locally, --gpus (default 'auto': the parent's CUDA_VISIBLE_DEVICES, else
the GPUs nvidia-smi lists, else none) gives the GPUs to spread the runs over:
the --parallel slots take them in turn, each run sees only its slot's GPU
(CUDA_VISIBLE_DEVICES), and the sweep prints which run got which GPU. When
several runs share one GPU (--parallel above the number of GPUs), or a Ray run
declares --gpus_per_run below 1, each run's JAX may take only its share of the
GPU's memory: XLA_PYTHON_CLIENT_MEM_FRACTION = 0.9 x share (JAX alone takes
0.75 of a GPU at its start, so a second run would not fit). A memory setting
of JAX's in the sweep's own environment is passed on unchanged instead.
"""

import concurrent.futures
import copy
import dataclasses
import json
import os
import queue
import shlex
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from typing import Dict, List, Optional, Sequence, Tuple

from absl import flags

from zoo.configuration import agent_registry as agents_lib
from zoo.configuration import cli
from zoo.configuration import count_flags
from zoo.configuration import settings as settings_lib
from zoo.storage import files
from zoo.storage import results_csv
from zoo.storage import run_directory

AGENTS = agents_lib.agent_packages()
DEFAULT_NUM_ITERATIONS = settings_lib.Settings.num_iterations  # Atari's.
DEFAULT_COMMAND_TEMPLATE = (
    '{python} -m {agent}.run_atari --environment_name={game} --seed={seed} '
    '--results_csv_path={results_csv_path} --checkpoint_dir={checkpoint_dir}')
MINATAR_COMMAND_TEMPLATE = DEFAULT_COMMAND_TEMPLATE.replace('.run_atari',
                                                            '.run_minatar')
SUITES = ('atari', 'minatar')
RESULTS_FILE = settings_lib.RESULTS_FILE
CHECKPOINT_DIR = settings_lib.CHECKPOINT_DIR
LOG_FILE = 'run.log'
EXIT_FILE, SPEC_FILE = 'exit.json', 'sweep.json'
DONE, RUNNING, FAILED, PENDING = 'done', 'running', 'failed', 'pending'
# JAX's memory settings: one in the sweep's environment is left as it is.
JAX_MEMORY_VARIABLES = ('XLA_PYTHON_CLIENT_MEM_FRACTION',
                        'XLA_PYTHON_CLIENT_PREALLOCATE',
                        'XLA_PYTHON_CLIENT_ALLOCATOR')
# Of a shared GPU, the fraction the runs' JAX pools may take together; the
# rest is left to each process's CUDA context and the driver.
GPU_MEMORY_HEADROOM = 0.9
# Run flags the sweep gives each run itself (its game, seed and files).
SET_PER_RUN = ('environment_name', 'seed', 'seeds', 'results_csv_path',
               'checkpoint_dir')
_DEFINE = {'string': flags.DEFINE_string, 'integer': flags.DEFINE_integer,
           'float': flags.DEFINE_float, 'bool': flags.DEFINE_bool,
           'enum': flags.DEFINE_enum, 'count': count_flags.DEFINE_count}

FLAGS = flags.FLAGS


def define_flags() -> None:
  """Define the flags of this entry point.

  Called only when run as a program, so that the scripts and the run
  entry points can be imported together (tests) without flag clashes.
  """
  flags.DEFINE_list('agents', None, f'Agents, from {", ".join(AGENTS)}.')
  flags.DEFINE_enum('suite', 'atari', list(SUITES),
                    "Family of games: 'atari' runs <agent>.run_atari, "
                    "'minatar' <agent>.run_minatar.")
  flags.DEFINE_list('games', None, "Games of the suite (Atari: DQN Zoo "
                    "names), or 'all'.")
  flags.DEFINE_list('seeds', ['1'], 'Seeds (integers).')
  flags.DEFINE_string('root_dir', None, 'Where the runs live.')
  flags.DEFINE_string(
      'flags', '', "Extra flags for every run, e.g. '--num_iterations=2': "
      "the run's flags (<agent>.run_<suite> --help), checked for every run "
      'before any starts.')
  flags.DEFINE_integer(
      'num_iterations', None, 'Iterations of a complete run (default: '
      "--num_iterations inside --flags, else the suite's default).")
  flags.DEFINE_integer(
      'parallel', 1, 'Local mode: runs at the same time.')
  flags.DEFINE_string(
      'gpus', 'auto', "Local mode: GPUs to spread the runs over, e.g. '0,1'; "
      "'auto': the sweep's CUDA_VISIBLE_DEVICES, else nvidia-smi's GPUs, else "
      "none; 'none': leave the runs' CUDA_VISIBLE_DEVICES alone.")
  flags.DEFINE_string(
      'command_template', None,
      'Command of one run; fields {python} {agent} {game} {seed} '
      '{results_csv_path} {checkpoint_dir} {run_dir}; --flags are appended. '
      f'Default: {DEFAULT_COMMAND_TEMPLATE!r} (run_minatar for MinAtar).')
  flags.DEFINE_string(
      'ray_address', None, "Run on this Ray cluster ('auto': the local one).")
  flags.DEFINE_float('cpus_per_run', 1.0, 'Ray: CPUs per run.')
  flags.DEFINE_float('gpus_per_run', 0.0, 'Ray: GPUs per run; below 1, '
                     "each run's JAX takes that share of the GPU's memory.")
  flags.DEFINE_bool(
      'status', False, 'Print the done/running/failed/pending table and exit.')
  flags.DEFINE_bool('dry_run', False, 'Print the commands only.')
  flags.DEFINE_bool(
      'retry_failed', True, 'Relaunch failed runs (else leave them failed).')



@dataclasses.dataclass(frozen=True)
class RunSpec:
  """One run of the sweep and where its files go."""
  agent: str
  game: str
  seed: int
  run_dir: str
  command: List[str]
  num_iterations: int
  # Variables set in the run's environment on top of the sweep's.
  env: Tuple[Tuple[str, str], ...] = ()

  @property
  def name(self) -> str:
    return f'{self.agent}/{self.game}/seed_{self.seed}'

  @property
  def results_csv_path(self) -> str:
    return os.path.join(self.run_dir, RESULTS_FILE)


@dataclasses.dataclass(frozen=True)
class RunStatus:
  agent: str
  game: str
  seed: int
  state: str
  last_iteration: int
  detail: str


def run_dir_of(root_dir: str, agent: str, game: str, seed: int) -> str:
  return settings_lib.run_dir(root_dir, agent, game, seed)


def parse_num_iterations(extra_flags: Sequence[str]) -> Optional[int]:
  """Return the value of --num_iterations among `extra_flags`, if any."""
  for i, flag in enumerate(extra_flags):
    if flag.startswith('--num_iterations='):
      return int(flag.split('=', 1)[1])
    if flag == '--num_iterations' and i + 1 < len(extra_flags):
      return int(extra_flags[i + 1])
  return None


def suite_defaults(suite: str) -> Tuple[str, int]:
  """Return (command template, iterations of a complete run) of a suite."""
  if suite == 'atari':
    return DEFAULT_COMMAND_TEMPLATE, DEFAULT_NUM_ITERATIONS
  if suite == 'minatar':
    # pylint: disable=g-import-not-at-top
    from zoo.suites import minatar_suite  # Imported here: MinAtar is an extra.
    return (MINATAR_COMMAND_TEMPLATE,
            minatar_suite.FLAG_DEFAULTS['num_iterations'])
  raise ValueError(f'Unknown suite {suite!r}; choose from {", ".join(SUITES)}.')


def _suite_games(suite: str):
  """Return (games, check_game) of a suite."""
  # pylint: disable=g-import-not-at-top
  if suite == 'minatar':
    from zoo.environments import minatar_env
    return minatar_env.GAMES, minatar_env.check_game
  from zoo.environments import atari_data
  return atari_data.GAMES, atari_data.check_game


def validate(agents: Sequence[str], games: Sequence[str],
             seeds: Sequence[str], suite: str = 'atari') -> tuple:
  """Return (agents, games, seeds) checked; raise ValueError naming the fix."""
  suite_defaults(suite)  # Unknown suite: error.
  all_games, check_game = _suite_games(suite)
  if not agents:
    raise ValueError(f'--agents is required: some of {", ".join(AGENTS)}.')
  unknown = [a for a in agents if a not in AGENTS]
  if unknown:
    raise ValueError(f'Unknown agent(s) {unknown}; choose from '
                     f'{", ".join(AGENTS)}.')
  if not games:
    raise ValueError(f"--games is required: {suite} game names, or 'all'.")
  if list(games) == ['all']:
    games = list(all_games)
  games = [check_game(g) for g in games]
  try:
    seed_values = [int(s) for s in seeds]
  except ValueError:
    raise ValueError(f'--seeds must be integers, got {list(seeds)}.') from None
  for name, values in (('agents', agents), ('games', games),
                       ('seeds', seed_values)):
    if len(set(values)) != len(values):
      raise ValueError(f'--{name} lists a value twice: {list(values)}.')
  return list(agents), games, seed_values


def run_flag_values(suite) -> flags.FlagValues:
  """Return new FlagValues holding the flags of `<agent>.run_<suite>`.

  The same flags as zoo.configuration.settings_flags defines, from the same
  Settings fields, with the suite's defaults and absl's logging flags; on
  their own FlagValues, since the sweep's own --seeds and --num_iterations
  would clash with the run's on absl's global ones.
  """
  values = flags.FlagValues()
  for field in dataclasses.fields(settings_lib.Settings):
    if field.metadata:
      options = dict(field.metadata['options'])
      enum_values = ((options.pop('enum_values'),) if 'enum_values' in options
                     else ())
      _DEFINE[field.metadata['kind']](
          field.name, field.default, *enum_values, field.metadata['help'],
          flag_values=values, **options)
  flags.DEFINE_string('preset', None, "The agent's variant.",
                      flag_values=values)
  flags.DEFINE_bool('restart', False, 'Start the run over.',
                    flag_values=values)
  flags.DEFINE_list('seeds', None, 'Seeds of one process.', flag_values=values)
  for flag in flags.FLAGS.get_flags_for_module('absl.logging'):
    flags.DEFINE_flag(copy.deepcopy(flag), values)
  for name, value in suite.flag_defaults.items():
    values.set_default(name, value)
  return values


def parse_run_flags(suite, extra_flags: Sequence[str]) -> Dict[str, object]:
  """Return the run flags `extra_flags` give, parsed as a run parses them.

  Returns every setting's value (the suite's default where not given) and
  'preset' (None: each agent's default). Raises ValueError naming the fix:
  an unknown flag or a bad value, or a flag the sweep sets for each run.
  """
  values = run_flag_values(suite)
  try:
    rest = values(['run'] + list(extra_flags))
  except flags.Error as e:
    raise ValueError(f'--flags: {cli.one_line(e)} (the runs\' flags: python '
                     f'-m <agent>.run_{suite.name} --help).') from None
  if len(rest) > 1:
    raise ValueError(f'--flags: unexpected arguments {rest[1:]}; give '
                     "flags only, e.g. --flags='--num_iterations=2'.")
  given = [name for name in SET_PER_RUN if values[name].present]
  if given:
    raise ValueError(
        f'--flags sets --{given[0]}, which the sweep sets for each run; use '
        "the sweep's --games, --seeds and --root_dir instead.")
  parsed = {name: values[name].value for name in settings_lib.SETTINGS}
  parsed['preset'] = values['preset'].value
  return parsed


def check_runs(specs: Sequence[RunSpec], suite,
               run_flags: Dict[str, object]) -> None:
  """Raise ValueError naming the fix unless every run's settings are valid.

  Each run's settings are resolved and validated as the run does first
  (zoo.configuration.settings); the probes of its disk and device stay the
  run's own, since a run may execute on another node (Ray, SLURM).
  """
  presets = {}
  for spec in specs:
    if spec.agent not in presets:
      try:
        presets[spec.agent] = agents_lib.pick(
            agents_lib.package_presets(spec.agent),
            agents_lib.default_preset(spec.agent).name, run_flags['preset'])
      except ValueError as e:
        raise ValueError(f'--flags for {spec.agent}: {e}') from None
    values = dict(run_flags, environment_name=spec.game, seed=spec.seed,
                  results_csv_path=spec.results_csv_path,
                  checkpoint_dir=os.path.join(spec.run_dir, CHECKPOINT_DIR))
    del values['preset']
    try:
      settings_lib.validate_settings(suite, settings_lib.resolve_settings(
          suite, presets[spec.agent], values))
    except ValueError as e:  # ConfigError among them.
      raise ValueError(f'{spec.name}: {e}') from None


def expand(agents: Sequence[str], games: Sequence[str], seeds: Sequence[int],
           root_dir: str, extra_flags: Sequence[str] = (),
           command_template: str = DEFAULT_COMMAND_TEMPLATE,
           num_iterations: Optional[int] = None) -> List[RunSpec]:
  """Return one RunSpec per agent x game x seed (names assumed validated)."""
  if num_iterations is None:
    num_iterations = parse_num_iterations(extra_flags)
  if num_iterations is None:
    num_iterations = DEFAULT_NUM_ITERATIONS
  template = shlex.split(command_template)
  specs = []
  for agent in agents:
    for game in games:
      for seed in seeds:
        run_dir = os.path.abspath(run_dir_of(root_dir, agent, game, seed))
        fields = dict(
            python=sys.executable, agent=agent, game=game, seed=seed,
            run_dir=run_dir,
            results_csv_path=os.path.join(run_dir, RESULTS_FILE),
            checkpoint_dir=os.path.join(run_dir, CHECKPOINT_DIR))
        try:
          command = [part.format(**fields) for part in template]
        except KeyError as e:
          raise ValueError(f'--command_template: unknown field {e}; use '
                           f'{sorted(fields)}.') from None
        specs.append(RunSpec(agent, game, seed, run_dir,
                             command + list(extra_flags), num_iterations))
  return specs


def csv_last_iteration(path: str) -> int:
  """Return the last iteration in a results CSV, or -1 if none."""
  iterations = csv_iterations(path)
  return max(iterations) if iterations else -1


def csv_iterations(path: str) -> set:
  """Return the iterations a results CSV holds (none if it is unreadable)."""
  try:
    return set(results_csv.iterations(path))
  except (OSError, KeyError, ValueError, TypeError):
    return set()


def is_finished(path: str, num_iterations: int) -> bool:
  """Return whether the CSV holds every iteration 0..num_iterations."""
  return csv_iterations(path) >= set(range(num_iterations + 1))


def _read_json(path: str) -> Optional[dict]:
  try:
    with open(path) as f:
      return json.load(f)
  except (OSError, ValueError):
    return None


def _write_json(path: str, data: dict) -> None:
  files.write_atomically(path, json.dumps(data))


def run_status(run_dir: str, agent: str, game: str, seed: int,
               num_iterations: int) -> RunStatus:
  """Classify one run: done, running, failed or pending."""
  csv_path = os.path.join(run_dir, RESULTS_FILE)
  spec = _read_json(os.path.join(run_dir, SPEC_FILE)) or {}
  num_iterations = spec.get('num_iterations', num_iterations)
  last = csv_last_iteration(csv_path)
  holder = run_directory.holder(run_dir)
  exit_status = _read_json(os.path.join(run_dir, EXIT_FILE))
  if is_finished(csv_path, num_iterations):
    state, detail = DONE, ''
  elif holder:
    state, detail = RUNNING, holder
  elif exit_status and exit_status.get('returncode') != 0:
    state, detail = FAILED, f'exit {exit_status.get("returncode")}, see {LOG_FILE}'
  elif exit_status:
    state, detail = FAILED, 'exit 0 but CSV incomplete'
  elif os.path.exists(os.path.join(run_dir, run_directory.LOCK_FILE)):
    state, detail = PENDING, 'interrupted (stale lock: its process died)'
  else:
    state, detail = PENDING, 'interrupted' if last >= 0 else ''
  return RunStatus(agent, game, seed, state, last, detail)


def discover(root_dir: str) -> List[tuple]:
  """Return (agent, game, seed, run_dir) for every run dir under root_dir."""
  found = []
  if not os.path.isdir(root_dir):
    return found
  for agent in sorted(os.listdir(root_dir)):
    agent_dir = os.path.join(root_dir, agent)
    if not os.path.isdir(agent_dir):
      continue
    for game in sorted(os.listdir(agent_dir)):
      game_dir = os.path.join(agent_dir, game)
      if not os.path.isdir(game_dir):
        continue
      for name in sorted(os.listdir(game_dir)):
        if name.startswith('seed_') and name[5:].lstrip('-').isdigit():
          found.append((agent, game, int(name[5:]),
                        os.path.join(game_dir, name)))
  return found


def sweep_status(root_dir: str, specs: Sequence[RunSpec] = (),
                 num_iterations: int = DEFAULT_NUM_ITERATIONS
                 ) -> List[RunStatus]:
  """Return the status of every run on disk plus every expected run in `specs`."""
  runs = {(a, g, s): d for a, g, s, d in discover(root_dir)}
  iterations = {}
  for spec in specs:
    key = (spec.agent, spec.game, spec.seed)
    runs.setdefault(key, spec.run_dir)
    iterations[key] = spec.num_iterations
  return [run_status(d, *key, iterations.get(key, num_iterations))
          for key, d in sorted(runs.items())]


def no_runs_message(root_dir: str) -> str:
  """Return what --status says of a --root_dir that holds no run."""
  where = (f'{root_dir} does not exist' if not os.path.exists(root_dir) else
           f'no run directory under {root_dir}')
  return (f'--status: {where}. A sweep keeps each run in '
          f'ROOT/<agent>/<game>/seed_<s>/ ({RESULTS_FILE}, {LOG_FILE}, ...). '
          'Pass the --root_dir the sweep was launched with, or add --agents, '
          '--games and --seeds to list the runs it would make.')


def format_status(statuses: Sequence[RunStatus]) -> str:
  """Return a plain-text table of runs and a count per state."""
  header = ('agent', 'game', 'seed', 'state', 'last_iter', 'detail')
  rows = [tuple(str(x) for x in (s.agent, s.game, s.seed, s.state,
                                 s.last_iteration, s.detail))
          for s in statuses]
  widths = [max([len(h)] + [len(r[i]) for r in rows])
            for i, h in enumerate(header)]
  lines = ['  '.join(c.ljust(w) for c, w in zip(row, widths)).rstrip()
           for row in [header] + rows]
  counts = {state: sum(s.state == state for s in statuses)
            for state in (DONE, RUNNING, FAILED, PENDING)}
  lines.append(', '.join(f'{n} {state}' for state, n in counts.items()) +
               f' ({len(statuses)} runs)')
  return '\n'.join(lines)


# Children of this process, so that an interrupted sweep can stop them.
_children: Dict[int, subprocess.Popen] = {}
_children_lock = threading.Lock()
_stopping = threading.Event()


def execute_run(spec: RunSpec) -> Optional[int]:
  """Run one spec to its end; return its exit code, or None if skipped.

  Holds the run directory's lock (zoo.storage.run_directory.lock) while it runs,
  handed down to the run, and writes exit.json when it ends (not when the
  sweep was interrupted, so that the run shows as pending and resumes next
  time). Used as is by the local pool and as the body of a Ray task.
  """
  os.makedirs(spec.run_dir, exist_ok=True)
  if is_finished(spec.results_csv_path, spec.num_iterations):
    return None
  try:
    lock = run_directory.lock(spec.run_dir)
  except run_directory.Refused:
    return None  # Running already.
  try:
    _write_json(os.path.join(spec.run_dir, SPEC_FILE),
                {'command': spec.command, 'num_iterations': spec.num_iterations})
    try:
      os.remove(os.path.join(spec.run_dir, EXIT_FILE))
    except FileNotFoundError:
      pass
    with open(os.path.join(spec.run_dir, LOG_FILE), 'a') as log:
      log.write(f'=== {time.strftime("%Y-%m-%d %H:%M:%S")} on '
                f'{socket.gethostname()}: '
                + ''.join(f'{k}={shlex.quote(v)} ' for k, v in spec.env)
                + f'{shlex.join(spec.command)}\n')
      log.flush()
      with _children_lock:
        # Checked under the lock so that no run starts once stopping began.
        if _stopping.is_set():
          return None
        # Own session: a terminal's Ctrl-C reaches the sweep only, which then
        # stops its children without recording them as failed.
        child = subprocess.Popen(
            spec.command, stdout=log, stderr=subprocess.STDOUT,
            stdin=subprocess.DEVNULL, start_new_session=True,
            pass_fds=(lock,),
            env=dict(os.environ, **dict(spec.env),
                     **{run_directory.LOCK_FD_ENV: str(lock)}))
        _children[child.pid] = child
      run_directory.record_holder(lock, child.pid)
      returncode = child.wait()
      with _children_lock:
        _children.pop(child.pid, None)
    if not _stopping.is_set():
      _write_json(os.path.join(spec.run_dir, EXIT_FILE),
                  {'returncode': returncode, 'finished': time.time(),
                   'host': socket.gethostname()})
    return returncode
  finally:
    run_directory.unlock(lock, spec.run_dir)


def _stop_children() -> None:
  with _children_lock:
    _stopping.set()
    children = list(_children.values())
  for child in children:
    child.terminate()
  for child in children:
    try:
      child.wait(timeout=30)
    except subprocess.TimeoutExpired:
      child.kill()


def select_runs(specs: Sequence[RunSpec], retry_failed: bool = True
                ) -> List[RunSpec]:
  """Return the specs to launch: not done, not running, not failed unless retried."""
  todo = []
  for spec in specs:
    status = run_status(spec.run_dir, spec.agent, spec.game, spec.seed,
                        spec.num_iterations)
    if status.state in (DONE, RUNNING):
      continue
    if status.state == FAILED and not retry_failed:
      continue
    todo.append(spec)
  return todo


def _report(spec: RunSpec, returncode: Optional[int], started: float,
            finished: int, total: int) -> None:
  outcome = 'skipped' if returncode is None else f'exit {returncode}'
  print(f'[{finished}/{total}] {spec.name}: {outcome}, '
        f'{(time.time() - started) / 60:.1f} min into the sweep (log: '
        f'{spec.run_dir}/{LOG_FILE})', flush=True)


def visible_gpus(gpus: str = 'auto', environ=None, which=shutil.which,
                 run=subprocess.run) -> Tuple[List[str], str]:
  """Return (the GPUs to spread local runs over, where that comes from).

  Args:
    gpus: --gpus: 'auto', 'none' (or empty) or a comma-separated list of
      CUDA device ids (indices or UUIDs).
    environ: the sweep's environment (default os.environ).
    which, run: shutil.which and subprocess.run (replaced in tests).
  """
  environ = os.environ if environ is None else environ
  if gpus.strip() in ('', 'none'):
    return [], '--gpus=none'
  if gpus.strip() != 'auto':
    return [g.strip() for g in gpus.split(',') if g.strip()], '--gpus'
  visible = environ.get('CUDA_VISIBLE_DEVICES')
  if visible is not None:
    return ([g.strip() for g in visible.split(',')
             if g.strip() and g.strip() != '-1'], 'CUDA_VISIBLE_DEVICES')
  if which('nvidia-smi'):
    try:
      listed = run(['nvidia-smi', '--query-gpu=index', '--format=csv,noheader'],
                   capture_output=True, text=True, timeout=60, check=False)
    except (OSError, subprocess.SubprocessError):
      return [], 'none: nvidia-smi failed'
    if listed.returncode == 0:
      return ([line.strip() for line in listed.stdout.splitlines()
               if line.strip()], 'nvidia-smi')
    return [], 'none: nvidia-smi failed'
  return [], 'none found (no CUDA_VISIBLE_DEVICES, no nvidia-smi)'


def memory_environment(share: float, environ=None) -> Dict[str, str]:
  """Return the JAX memory setting of a run that gets `share` of a GPU.

  Empty for a whole GPU, or when the sweep's environment already sets one of
  JAX's memory variables (which the runs then inherit).
  """
  environ = os.environ if environ is None else environ
  if share >= 1 or share <= 0 or any(v in environ
                                     for v in JAX_MEMORY_VARIABLES):
    return {}
  return {'XLA_PYTHON_CLIENT_MEM_FRACTION':
          f'{GPU_MEMORY_HEADROOM * share:.3g}'}


def local_slots(parallel: int, gpus: Sequence[str], environ=None
                ) -> List[Dict[str, str]]:
  """Return the environment of each of the `parallel` local run slots.

  Slot i gets GPU gpus[i % len(gpus)]; with more slots than GPUs, the runs on
  one GPU share its memory (memory_environment). No GPUs: no variables.
  """
  if not gpus:
    return [{} for _ in range(parallel)]
  per_gpu = -(-parallel // len(gpus))  # Slots on the busiest GPU.
  memory = memory_environment(1 / per_gpu, environ)
  return [dict(CUDA_VISIBLE_DEVICES=gpus[i % len(gpus)], **memory)
          for i in range(parallel)]


def describe_gpus(parallel: int, gpus: Sequence[str], source: str,
                  slots: Sequence[Dict[str, str]], environ=None) -> str:
  """Return the line the local sweep prints about its GPUs."""
  environ = os.environ if environ is None else environ
  if not gpus:
    return f'GPUs: {source}; the runs inherit the sweep\'s environment.'
  per_gpu = -(-parallel // len(gpus))
  text = (f'GPUs: {",".join(gpus)} (from {source}); {parallel} run(s) at a '
          f'time, at most {per_gpu} per GPU')
  fraction = slots[0].get('XLA_PYTHON_CLIENT_MEM_FRACTION')
  inherited = [f'{v}={environ[v]}' for v in JAX_MEMORY_VARIABLES
               if v in environ]
  if fraction:
    text += f', each with XLA_PYTHON_CLIENT_MEM_FRACTION={fraction}'
  elif per_gpu > 1 and inherited:
    text += f', each with the sweep\'s {" ".join(inherited)}'
  return text + '.'


def run_local(specs: Sequence[RunSpec], parallel: int,
              gpus: Sequence[str] = (), gpu_source: str = '--gpus'
              ) -> Dict[str, Optional[int]]:
  """Execute specs with at most `parallel` at once; return {run_dir: exit code}.

  Keyed by run directory: two configurations of one agent share a name.
  With `gpus`, each run sees one of them (local_slots) and the assignment
  is printed.
  """
  if parallel < 1:
    raise ValueError(f'--parallel must be >= 1, got {parallel}.')
  _stopping.clear()
  results = {}
  started = time.time()
  slots = local_slots(parallel, gpus)
  free = queue.Queue()
  for slot in range(parallel):
    free.put(slot)
  if gpus:
    print(describe_gpus(parallel, gpus, gpu_source, slots), flush=True)

  def execute_in_slot(spec: RunSpec) -> Optional[int]:
    slot = free.get()
    try:
      env = dict(spec.env)
      env.update(slots[slot])
      if gpus and not _stopping.is_set():
        print(f'{spec.name}: GPU {env["CUDA_VISIBLE_DEVICES"]}', flush=True)
      return execute_run(dataclasses.replace(spec, env=tuple(env.items())))
    finally:
      free.put(slot)

  executor = concurrent.futures.ThreadPoolExecutor(max_workers=parallel)
  try:
    futures = {executor.submit(execute_in_slot, spec): spec for spec in specs}
    for future in concurrent.futures.as_completed(futures):
      spec = futures[future]
      results[spec.run_dir] = future.result()
      _report(spec, results[spec.run_dir], started, len(results), len(specs))
  except KeyboardInterrupt:
    print('Interrupted: stopping the runs (they resume on relaunch).',
          file=sys.stderr)
    executor.shutdown(wait=False, cancel_futures=True)
    _stop_children()
    executor.shutdown(wait=True)
    raise
  executor.shutdown(wait=True)
  return results


def _import_ray():
  try:
    import ray  # pylint: disable=g-import-not-at-top
  except ImportError:
    raise ImportError(
        "--ray_address needs Ray, an optional extra: pip install '.[sweep]' "
        "(or pip install 'ray>=2.40'). The local mode (without "
        '--ray_address) needs nothing more.') from None
  return ray


def run_ray(specs: Sequence[RunSpec], address: str, cpus_per_run: float,
            gpus_per_run: float) -> Dict[str, Optional[int]]:
  """Execute one Ray task per spec at `address`; return {run_dir: exit code}."""
  ray = _import_ray()
  ray.init(address=address)
  # Refer to this module by its import name, so workers import it rather than
  # unpickling a copy of __main__.
  from scripts.experiments import sweep as sweep_module  # pylint: disable=g-import-not-at-top
  task = ray.remote(num_cpus=cpus_per_run, num_gpus=gpus_per_run)(
      sweep_module.execute_run)
  # Ray sets each task's CUDA_VISIBLE_DEVICES; a fraction of a GPU also needs
  # JAX to take no more than that fraction of its memory.
  memory = memory_environment(gpus_per_run)
  if memory:
    print(f'--gpus_per_run={gpus_per_run:g}: each run with '
          + ' '.join(f'{k}={v}' for k, v in memory.items()) + '.', flush=True)
  specs = [dataclasses.replace(spec, env=tuple({**dict(spec.env),
                                                **memory}.items()))
           for spec in specs]
  pending = {task.remote(spec): spec for spec in specs}
  results, started = {}, time.time()
  while pending:
    ready, _ = ray.wait(list(pending), num_returns=1)
    for ref in ready:
      spec = pending.pop(ref)
      try:
        results[spec.run_dir] = ray.get(ref)
      except Exception as e:  # pylint: disable=broad-except
        # The task itself died (node lost): report, the run stays resumable.
        print(f'{spec.name}: Ray task failed: {e}', file=sys.stderr)
        results[spec.run_dir] = -1
      _report(spec, results[spec.run_dir], started, len(results), len(specs))
  return results


def _raise_keyboard_interrupt(signum, frame):
  del signum, frame
  raise KeyboardInterrupt


def _specs_from_flags() -> Tuple[List[RunSpec], int]:
  """Return the sweep's runs and their iterations; ValueError naming the fix.

  Launching (not --status) also checks every run's settings, and that Ray
  imports with --ray_address, before anything starts.
  """
  if not FLAGS.root_dir:
    raise ValueError('--root_dir is required: where the runs live (each in '
                     'ROOT/<agent>/<game>/seed_<s>/).')
  if FLAGS.parallel < 1:
    raise ValueError(f'--parallel must be >= 1, got {FLAGS.parallel}.')
  extra_flags = shlex.split(FLAGS['flags'].value)
  template, suite_iterations = suite_defaults(FLAGS.suite)
  if not FLAGS.agents and FLAGS.status:
    return [], FLAGS.num_iterations or suite_iterations
  agents, games, seeds = validate(FLAGS.agents, FLAGS.games, FLAGS.seeds,
                                  FLAGS.suite)
  # pylint: disable=g-import-not-at-top
  import jax  # The checks build JAX environments (--loop=jitted): on the CPU,
  jax.config.update('jax_platforms', 'cpu')  # leaving the GPUs to the runs.
  from zoo.configuration import suites
  suite = suites.suite_by_name(FLAGS.suite)
  run_flags = parse_run_flags(suite, extra_flags)
  num_iterations = FLAGS.num_iterations or run_flags['num_iterations']
  specs = expand(agents, games, seeds, FLAGS.root_dir, extra_flags,
                 FLAGS.command_template or template, num_iterations)
  if not FLAGS.status:
    check_runs(specs, suite, run_flags)
    if FLAGS.ray_address:
      _import_ray()
  return specs, num_iterations


def main(argv):
  # A killed sweep (SIGTERM) stops its runs like Ctrl-C: they resume later.
  signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)
  if len(argv) > 1:
    sys.exit(f'Error: unexpected arguments {argv[1:]}; give flags only '
             '(--help lists them).')
  try:
    specs, num_iterations = _specs_from_flags()
  except (ValueError, ImportError) as e:
    sys.exit(f'Error: {e}')
  if FLAGS.status:
    statuses = sweep_status(FLAGS.root_dir, specs, num_iterations)
    if not statuses:
      sys.exit(f'Error: {no_runs_message(FLAGS.root_dir)}')
    print(format_status(statuses))
    return
  todo = select_runs(specs, FLAGS.retry_failed)
  print(f'{len(specs)} runs: {len(specs) - len(todo)} done, running or failed '
        f'(skipped), {len(todo)} to launch.', flush=True)
  if FLAGS.dry_run:
    for spec in todo:
      print(shlex.join(spec.command))
    return
  if FLAGS.ray_address:
    results = run_ray(todo, FLAGS.ray_address, FLAGS.cpus_per_run,
                      FLAGS.gpus_per_run)
  else:
    gpus, gpu_source = visible_gpus(FLAGS.gpus)
    try:
      results = run_local(todo, FLAGS.parallel, gpus, gpu_source)
    except KeyboardInterrupt:
      print(format_status(sweep_status(FLAGS.root_dir, specs,
                                       num_iterations)))
      sys.exit(130)
  print(format_status(sweep_status(FLAGS.root_dir, specs, num_iterations)))
  failed = [name for name, code in results.items() if code not in (0, None)]
  if failed:
    print(f'{len(failed)} run(s) failed: {", ".join(failed)}', file=sys.stderr)
    sys.exit(1)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
