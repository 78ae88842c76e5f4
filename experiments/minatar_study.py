r"""The MinAtar study: the paper's five agents x games x seeds, on the sweep.

  python -m experiments.minatar_study --root_dir=runs/minatar_study --dry_run
  python -m experiments.minatar_study --root_dir=runs/minatar_study --parallel=2
  python -m experiments.minatar_study --root_dir=runs/minatar_study --report \
      --output_dir=docs/minatar

Configurations: the presets QR-DQN-1, QR-DQN-0, CR-DQN, NC-CR-DQN and
NC-QR-DQN-0 (zoo.agents) on --games x --seeds, each run `python -m
<agent>.run_minatar --preset=NAME` with MinAtar's defaults except the length (--num_iterations x
--num_train_frames steps; ε still decays over the first 100k steps after the
learning start), plus the K-stream check: CR-DQN with --num_envs=8 on
--k_stream_game (the same seeds), to compare with its K = 1 runs. Runs of a
configuration live in ROOT/<label>/<agent>/<game>/seed_<s>/ (experiments.sweep's
layout), so relaunching skips finished runs and resumes the others. Runs are
ordered seed by seed, so that a study stopped early holds whole seeds.
--report writes the report of the planned runs (analysis.minatar_report: the
same flags name the same runs) and runs nothing.
"""

import os
import shlex
import sys
import time
from typing import Any, Dict, List, NamedTuple, Sequence, Tuple

from absl import app
from absl import flags

from experiments import sweep
from zoo import agents
from zoo import files
from zoo import minatar_env

FLAGS = flags.FLAGS
EPSILON_DECAY_STEPS = 100_000  # Young & Tian: ε 1 -> 0.1 over 100k steps.


class Config(NamedTuple):
  label: str
  preset: str                  # A zoo.agents preset name.
  flags: Tuple[str, ...] = ()  # Beyond the preset's.

  @property
  def agent(self) -> str:
    """The preset's package (whose run_minatar runs it)."""
    return agents.presets()[self.preset].package

  def command_flags(self) -> Tuple[str, ...]:
    return (f'--preset={self.preset}',) + self.flags


STUDY_PRESETS = ('QR-DQN-1', 'QR-DQN-0', 'CR-DQN', 'NC-CR-DQN', 'NC-QR-DQN-0')
CONFIGS = tuple(Config(name, name) for name in STUDY_PRESETS)
K_STREAM_CONFIG = Config('CR-DQN-K8', 'CR-DQN', ('--num_envs=8',))


def config_settings(config: Config) -> Dict[str, Any]:
  """Return a configuration's flags beyond its preset, parsed as the entry
  point parses them.

  '--name=value' is parsed by the run flag `name`; '--name' alone is a
  boolean set to True.
  """
  # Imported here: the run flags would clash with this tool's own.
  from zoo import settings_flags  # pylint: disable=g-import-not-at-top
  settings = {}
  for flag in config.flags:
    name, has_value, value = flag[2:].partition('=')
    if name not in settings_flags.settings_lib.SETTINGS:
      raise ValueError(f'{config.label}: {flag} is not a run setting.')
    settings[name] = (settings_flags.FLAGS[name].parser.parse(value)
                      if has_value else True)
  return settings

# `python -m benchmarks.bench_minatar` on the project's idle 2-core CPU (AMD EPYC,
# AVX-512), XLA single-threaded as a study run: the mean over the five K = 1
# configurations of the ms per training step (act, env, replay, one update per
# 4 steps; 1.1 to 2.1) and per evaluation step (0.28 to 0.36), medians of 3
# rounds. Two study runs on two cores get about a core each; runs that share
# the machine with other work are slower (the study's own runs trained at 133
# to 485 steps/s under load, i.e. 2 to 7.5 ms per step). Rerun the benchmark
# to calibrate another machine and pass --train_step_ms / --eval_step_ms.
DEFAULT_TRAIN_STEP_MS = 1.55
DEFAULT_EVAL_STEP_MS = 0.32
RANDOM_SEEDS = (1, 2, 3)  # The random policy's seeds in the report.


def define_flags() -> None:
  """Define the flags of this entry point (only when run)."""
  flags.DEFINE_string('root_dir', None, 'Where the study\'s runs live.')
  flags.DEFINE_list('games', ['asterix', 'breakout', 'seaquest'],
                    f'MinAtar games, from {", ".join(minatar_env.GAMES)}.')
  flags.DEFINE_list('seeds', ['1', '2', '3'], 'Seeds (integers).')
  flags.DEFINE_list('configs', [c.label for c in CONFIGS],
                    'Configurations to run (labels).')
  flags.DEFINE_string('k_stream_game', 'breakout',
                      'Game of the K = 8 vs K = 1 check; empty: none.')
  flags.DEFINE_integer('num_iterations', 5, 'Iterations per run.')
  flags.DEFINE_integer('num_train_frames', 100_000,
                       'Training steps per iteration (MinAtar: frame = step).')
  flags.DEFINE_integer('num_eval_frames', 25_000,
                       'Evaluation steps per iteration.')
  flags.DEFINE_integer('parallel', 2, 'Runs at the same time.')
  flags.DEFINE_float('train_step_ms', DEFAULT_TRAIN_STEP_MS,
                     'Cost of one training step, for the estimate.')
  flags.DEFINE_float('eval_step_ms', DEFAULT_EVAL_STEP_MS,
                     'Cost of one evaluation step, for the estimate.')
  flags.DEFINE_bool('dry_run', False, 'Print the plan and the estimate only.')
  flags.DEFINE_bool('report', False, 'Write the report of the planned runs '
                    'into --output_dir; run nothing.')
  flags.DEFINE_string('output_dir', 'docs/minatar', 'Where --report writes.')
  flags.DEFINE_string('machine', None, 'Where the runs ran, for the report '
                      "(default: this machine's CPU and cores).")
  flags.DEFINE_integer('bootstrap_reps', 50_000, 'Bootstrap resamples.')
  flags.DEFINE_integer('random_steps', 25_000, 'Steps per seed of the random '
                       "policy's measurement in the report.")


def study_flags(num_iterations: int, num_train_frames: int,
                num_eval_frames: int) -> List[str]:
  """Return the flags every run gets: length, and ε over 100k steps."""
  total = num_iterations * num_train_frames
  if total < EPSILON_DECAY_STEPS:
    raise ValueError(f'A run of {total} steps is shorter than the ε decay '
                     f'({EPSILON_DECAY_STEPS} steps); raise --num_iterations '
                     'or --num_train_frames.')
  return [f'--num_iterations={num_iterations}',
          f'--num_train_frames={num_train_frames}',
          f'--num_eval_frames={num_eval_frames}',
          '--exploration_epsilon_decay_frame_fraction='
          f'{EPSILON_DECAY_STEPS / total!r}']


def plan(root_dir: str, configs: Sequence[Config], games: Sequence[str],
         seeds: Sequence[int], k_stream_game: str, common: Sequence[str]
         ) -> List[Tuple[str, sweep.RunSpec]]:
  """Return (label, spec) of every run, seed by seed."""
  runs = []
  for seed in seeds:
    for game in games:
      for config in configs:
        runs.append((config, game, seed))
    if k_stream_game:
      runs.append((K_STREAM_CONFIG, k_stream_game, seed))
  out = []
  for config, game, seed in runs:
    spec, = sweep.expand([config.agent], [game], [seed],
                         os.path.join(root_dir, config.label),
                         list(common) + list(config.command_flags()),
                         sweep.MINATAR_COMMAND_TEMPLATE)
    out.append((config.label, spec))
  return out


def estimate_seconds(num_runs: int, parallel: int, num_iterations: int,
                     num_train_frames: int, num_eval_frames: int,
                     train_step_ms: float, eval_step_ms: float) -> float:
  per_run = (num_iterations * num_train_frames * train_step_ms +
             (num_iterations + 1) * num_eval_frames * eval_step_ms) / 1e3
  waves = -(-num_runs // parallel)
  return waves * per_run


def _validate() -> Tuple[List[Config], List[str], List[int]]:
  labels = {c.label: c for c in CONFIGS}
  unknown = [c for c in FLAGS.configs if c not in labels]
  if unknown:
    raise app.UsageError(f'Unknown --configs {unknown}; choose from '
                         f'{", ".join(labels)}.')
  try:
    games = [minatar_env.check_game(g) for g in FLAGS.games]
    if FLAGS.k_stream_game:
      minatar_env.check_game(FLAGS.k_stream_game)
    seeds = [int(s) for s in FLAGS.seeds]
  except ValueError as e:
    raise app.UsageError(str(e))
  if FLAGS.parallel < 1:
    raise app.UsageError(f'--parallel must be >= 1, got {FLAGS.parallel}.')
  return [labels[c] for c in FLAGS.configs], games, seeds


def _report(runs, configs: Sequence[Config], games: Sequence[str]) -> None:
  # Imported here: plotting is not needed to plan or run the study.
  # pylint: disable=g-import-not-at-top
  from analysis import minatar_report
  from experiments import minatar_random
  # pylint: enable=g-import-not-at-top
  try:
    files.make_writable_directory(FLAGS.output_dir)
  except OSError as e:
    raise app.UsageError(f'--output_dir: cannot write in '
                         f'{FLAGS.output_dir!r} ({e}).')
  planned = [(label, spec.game, spec.seed, spec.results_csv_path)
             for label, spec in runs]
  k_stream = ((K_STREAM_CONFIG.label, FLAGS.k_stream_game)
              if FLAGS.k_stream_game else None)
  random_games = list(games) + ([FLAGS.k_stream_game]
                                 if FLAGS.k_stream_game else [])
  random_results = [minatar_random.measure(g, RANDOM_SEEDS, FLAGS.random_steps)
                    for g in dict.fromkeys(random_games)]
  written = minatar_report.write_report(
      planned, [c.label for c in configs], games, k_stream, FLAGS.output_dir,
      num_iterations=FLAGS.num_iterations,
      num_train_frames=FLAGS.num_train_frames,
      num_eval_frames=FLAGS.num_eval_frames,
      machine=FLAGS.machine or minatar_report.cpu_description(),
      random_results=random_results, reps=FLAGS.bootstrap_reps)
  for path in written:
    print(path)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  if not FLAGS.root_dir:
    raise app.UsageError('--root_dir is required.')
  configs, games, seeds = _validate()
  try:
    common = study_flags(FLAGS.num_iterations, FLAGS.num_train_frames,
                         FLAGS.num_eval_frames)
  except ValueError as e:
    raise app.UsageError(str(e))
  runs = plan(FLAGS.root_dir, configs, games, seeds, FLAGS.k_stream_game,
              common)
  if FLAGS.report or not FLAGS.dry_run:  # Both run MinAtar games.
    try:
      minatar_env.check_installed()
    except minatar_env.NotInstalledError as e:
      sys.exit(f'Error: {e}')
  if FLAGS.report:
    _report(runs, configs, games)
    return
  specs = [spec for _, spec in runs]
  todo = sweep.select_runs(specs)
  seconds = estimate_seconds(len(todo), FLAGS.parallel, FLAGS.num_iterations,
                             FLAGS.num_train_frames, FLAGS.num_eval_frames,
                             FLAGS.train_step_ms, FLAGS.eval_step_ms)
  steps = FLAGS.num_iterations * FLAGS.num_train_frames
  print(f'MinAtar study: {len(configs)} configurations x {len(games)} games x '
        f'{len(seeds)} seeds' + (f' + CR-DQN K=8 on {FLAGS.k_stream_game}'
                                 if FLAGS.k_stream_game else '') +
        f' = {len(runs)} runs of {steps:,} training steps; {len(todo)} to '
        f'run, {FLAGS.parallel} at a time.')
  print(f'Estimated time: {seconds / 3600:.1f} h at {FLAGS.train_step_ms} ms '
        f'per training step and {FLAGS.eval_step_ms} ms per evaluation step '
        'per run (--train_step_ms, --eval_step_ms; measure with '
        'python -m benchmarks.bench_minatar).', flush=True)
  if FLAGS.dry_run:
    for label, spec in runs:
      print(f'{label}: {shlex.join(spec.command)}')
    return
  if FLAGS.parallel >= (os.cpu_count() or 1):
    # One core per run: XLA's thread pools would only fight each other.
    os.environ['XLA_FLAGS'] = (os.environ.get('XLA_FLAGS', '') +
                               ' --xla_cpu_multi_thread_eigen=false'
                               ' intra_op_parallelism_threads=1').strip()
  started = time.time()
  try:
    results = sweep.run_local(todo, FLAGS.parallel)
  except KeyboardInterrupt:
    print('Interrupted: rerun the same command to resume the study.',
          file=sys.stderr)
    sys.exit(130)
  failed = [name for name, code in results.items() if code not in (0, None)]
  print(f'Study done in {(time.time() - started) / 3600:.2f} h; '
        f'{len(failed)} failed run(s).')
  if failed:
    sys.exit(1)


if __name__ == '__main__':
  define_flags()
  app.run(main)
