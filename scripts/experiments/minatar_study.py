r"""The MinAtar study: the paper's five agents x games x seeds, on the sweep.

  python -m scripts.experiments.minatar_study --root_dir=runs/minatar_study --dry_run
  python -m scripts.experiments.minatar_study --root_dir=runs/minatar_study --parallel=2
  python -m scripts.experiments.minatar_study --root_dir=runs/minatar_study --report \
      --output_dir=docs/minatar
  python -m scripts.experiments.minatar_study --report --evidence_dir=evidence \
      --configs=CR-DQN,QR-DQN-1 --games=asterix --seeds=1,2,3 --output_dir=DIR
  python -m scripts.experiments.minatar_study --loop=jitted --root_dir=runs/minatar_jitted

--loop=jitted (zoo.loops.jitted_loop, docs/jitted-loop.md) runs each
configuration x game as one process with the seeds vmapped (`--seeds=...`),
one at a time; its defaults are the full study: the five games, seeds 1..10,
50 iterations (5M steps), no K-stream check. A group whose seeds all hold
every iteration is skipped; the others resume from their checkpoints. Its
report adds, per game, CR-DQN - QR-DQN-1 (final return, bootstrap CI over
seeds) and the IQM over games of the scores normalised per game by the
random policy (0) and the best configuration's mean (1), with stratified
bootstrap CIs (scripts.analysis.bootstrap).

Configurations: the presets QR-DQN-1, QR-DQN-0, CR-DQN, NC-CR-DQN and
NC-QR-DQN-0 (zoo.configuration.agent_registry) on --games x --seeds, each run `python -m
<agent>.run_minatar --preset=NAME` with MinAtar's defaults except the length (--num_iterations x
--num_train_frames steps; ε still decays over the first 100k steps after the
learning start), plus the K-stream check: CR-DQN with --num_envs=8 on
--k_stream_game (the same seeds), to compare with its K = 1 runs. Runs of a
configuration live in ROOT/<label>/<agent>/<game>/seed_<s>/ (scripts.experiments.sweep's
layout), so relaunching skips finished runs and resumes the others. Runs are
ordered seed by seed, so that a study stopped early holds whole seeds.
--report writes the report of the planned runs (scripts.analysis.minatar_report: the
same flags name the same runs) and runs nothing; with --evidence_dir it reads
them from the results folder (the evidence command's sessions:
runs/<piece>/<configuration>/<agent>/<game>/seed_<s>/) instead of --root_dir.
"""

import os
import shlex
import subprocess
import sys
import time
from typing import Any, Dict, List, NamedTuple, Sequence, Tuple

from absl import app
from absl import flags
import numpy as np

from scripts.analysis import run_data
from scripts.experiments import sweep
from zoo.configuration import agent_registry
from zoo.storage import files
from zoo.environments import minatar_env
from zoo.configuration import cli

FLAGS = flags.FLAGS
EPSILON_DECAY_STEPS = 100_000  # Young & Tian: ε 1 -> 0.1 over 100k steps.


class Config(NamedTuple):
  label: str
  preset: str                  # A zoo.configuration.agent_registry preset name.
  flags: Tuple[str, ...] = ()  # Beyond the preset's.

  @property
  def agent(self) -> str:
    """The preset's package (whose run_minatar runs it)."""
    return agent_registry.presets()[self.preset].package

  def command_flags(self) -> Tuple[str, ...]:
    return (f'--preset={self.preset}',) + self.flags


STUDY_PRESETS = ('QR-DQN-1', 'QR-DQN-0', 'CR-DQN', 'NC-CR-DQN', 'NC-QR-DQN-0')
CONFIGS = tuple(Config(name, name) for name in STUDY_PRESETS)
K_STREAM_CONFIG = Config('CR-DQN-K8', 'CR-DQN', ('--num_envs=8',))
# Run when named in --configs, not by default: the smoothed Cramér loss
# (docs: A smoothed Cramér loss), compared with CR-DQN and QR-DQN-1, and the
# sampled-level agents (docs: Sampled quantile levels), compared with CR-DQN.
OPTIONAL_CONFIGS = (Config('CR-DQN-MQ', 'CR-DQN-MQ'), Config('IQN', 'IQN'),
                    Config('CR-IQN', 'CR-IQN'))


def config_settings(config: Config) -> Dict[str, Any]:
  """Return a configuration's flags beyond its preset, parsed as the entry
  point parses them.

  '--name=value' is parsed by the run flag `name`; '--name' alone is a
  boolean set to True.
  """
  # Imported here: the run flags would clash with this tool's own.
  from zoo.configuration import settings_flags  # pylint: disable=g-import-not-at-top
  settings = {}
  for flag in config.flags:
    name, has_value, value = flag[2:].partition('=')
    if name not in settings_flags.settings_lib.SETTINGS:
      raise ValueError(f'{config.label}: {flag} is not a run setting.')
    settings[name] = (settings_flags.FLAGS[name].parser.parse(value)
                      if has_value else True)
  return settings

# `python -m scripts.benchmarks.bench_minatar` on the project's idle 2-core CPU (AMD EPYC,
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
  flags.DEFINE_string('evidence_dir', None, 'With --report: read the runs '
                      'from this results folder (evidence/) instead of '
                      '--root_dir: the newest results.csv of each '
                      'configuration, game and seed in its sessions.')
  flags.DEFINE_string('machine', None, 'Where the runs ran, for the report '
                      "(default: this machine's CPU and cores).")
  flags.DEFINE_integer('bootstrap_reps', 50_000, 'Bootstrap resamples.')
  flags.DEFINE_integer('random_steps', 25_000, 'Steps per seed of the random '
                       "policy's measurement in the report.")
  flags.DEFINE_enum('loop', 'python', ['python', 'jitted'],
                    'python: one process per run (scripts.experiments.sweep); jitted: one '
                    'process per configuration x game, seeds vmapped, with '
                    'the full study as defaults (module doc).')


# --loop=jitted's defaults, for the flags not given: the full study.
JITTED_DEFAULTS = {
    'games': list(minatar_env.GAMES),
    'seeds': [str(s) for s in range(1, 11)],
    'num_iterations': 50,
    'k_stream_game': '',
}
COMPARED = ('CR-DQN', 'QR-DQN-1')  # The paper's question: Cramér vs QR.


def apply_jitted_defaults() -> None:
  """Give the flags not on the command line --loop=jitted's defaults."""
  for name, value in JITTED_DEFAULTS.items():
    if not FLAGS[name].present:
      FLAGS[name].value = value


class Group(NamedTuple):
  """One jitted process: a configuration on a game, its seeds vmapped."""
  label: str
  game: str
  seeds: Tuple[int, ...]
  command: Tuple[str, ...]
  csv_paths: Tuple[str, ...]


def plan_groups(root_dir: str, configs: Sequence[Config], games: Sequence[str],
                seeds: Sequence[int], k_stream_game: str,
                common: Sequence[str]) -> List[Group]:
  """Return the jitted study's groups, game by game (scripts.experiments.sweep's layout)."""
  pairs = [(config, game) for game in games for config in configs]
  if k_stream_game:
    pairs.append((K_STREAM_CONFIG, k_stream_game))
  groups = []
  for config, game in pairs:
    base = os.path.abspath(os.path.join(root_dir, config.label))
    run_dir = os.path.join(base, '{agent}', '{environment_name}',
                           'seed_{seed}')
    command = (sys.executable, '-m', f'{config.agent}.run_minatar',
               '--loop=jitted', '--seeds=' + ','.join(map(str, seeds)),
               f'--environment_name={game}',
               f'--results_csv_path={os.path.join(run_dir, "results.csv")}',
               f'--checkpoint_dir={os.path.join(run_dir, "checkpoints")}',
               *common, *config.command_flags())
    paths = tuple(sweep.run_dir_of(base, config.agent, game, seed) +
                  '/results.csv' for seed in seeds)
    groups.append(Group(config.label, game, tuple(seeds), command, paths))
  return groups


def run_groups(groups: Sequence[Group], num_iterations: int) -> List[str]:
  """Run the unfinished groups one after the other; return the failed."""
  failed = []
  for group in groups:
    if all(sweep.is_finished(p, num_iterations) for p in group.csv_paths):
      continue
    log_path = os.path.join(os.path.dirname(os.path.dirname(
        group.csv_paths[0])), 'jitted.log')
    os.makedirs(os.path.dirname(log_path), exist_ok=True)
    print(f'{time.strftime("%H:%M:%S")} {group.label} on {group.game}, seeds '
          f'{",".join(map(str, group.seeds))}: log {log_path}', flush=True)
    with open(log_path, 'a') as log:
      log.write(f'=== {time.strftime("%Y-%m-%d %H:%M:%S")}: '
                f'{shlex.join(group.command)}\n')
      log.flush()
      code = subprocess.call(group.command, stdout=log,
                             stderr=subprocess.STDOUT)
    if code in (130, 143):
      raise KeyboardInterrupt
    if code:
      failed.append(f'{group.label}/{group.game} (exit {code})')
  return failed


def comparison_markdown(results, labels: Sequence[str], games: Sequence[str],
                        random_returns: Dict[str, float], reps: int,
                        seed: int = 0) -> str:
  """Return the report's CR-DQN - QR-DQN-1 and normalised-IQM sections.

  Args:
    results: scripts.analysis.minatar_report.RunResult of the complete runs.
    labels: the configurations, in order.
    games: the games, in order.
    random_returns: the random policy's return per game.
    reps: bootstrap resamples.
    seed: the bootstrap's seed.
  """
  # pylint: disable=g-import-not-at-top
  from scripts.analysis import bootstrap
  from scripts.analysis import minatar_report
  # pylint: enable=g-import-not-at-top
  final = {}
  for r in results:
    if r.complete:
      final.setdefault((r.label, r.game), {})[r.seed] = float(
          r.eval_return[-1])
  a, b = COMPARED
  lines = [f'## {a} - {b} per game', '',
           f'Final evaluation return of {a} minus {b}: difference of the '
           'means over seeds, 95% percentile bootstrap CI resampling each '
           "configuration's seeds.", '',
           '| game | seeds | difference [95% CI] |', '|---|---:|---|']
  for game in games:
    if (a, game) in final and (b, game) in final:
      cell = minatar_report.difference_ci(
          list(final[(a, game)].values()), list(final[(b, game)].values()),
          reps=reps, seed=seed)
      lines.append(f'| {game} | {cell.num_seeds} | '
                   f'{minatar_report._cell_text(cell)} |')  # pylint: disable=protected-access
    else:
      lines.append(f'| {game} | 0 | – |')
  best = {}
  for game in games:
    means = [np.mean(list(final[(label, game)].values())) for label in labels
             if (label, game) in final]
    if means and game in random_returns:
      best[game] = max(means)
  lines += ['', '## Aggregate over games', '',
            'Interquartile mean over seeds x games of the final return '
            'normalised per game, (score - random) / (best - random), where '
            "best is the best configuration's mean on that game; 95% "
            'stratified bootstrap CI (scripts.analysis.bootstrap). Only games where '
            'every configuration has complete runs, and only seeds complete '
            'on all of them.', '']
  usable = [g for g in games if g in best and
            best[g] != random_returns[g] and
            all((label, g) in final for label in labels)]
  if not usable:
    return '\n'.join(lines + ['No game has complete runs of every '
                              'configuration yet.', '']) + '\n'
  lines += [f'Games: {", ".join(usable)}.', '',
            '| configuration | seeds | normalised IQM [95% CI] |',
            '|---|---:|---|']
  for label in labels:
    seeds = sorted(set.intersection(*[set(final[(label, g)])
                                      for g in usable]))
    if not seeds:
      lines.append(f'| {label} | 0 | – |')
      continue
    scores = np.array([[(final[(label, g)][s] - random_returns[g]) /
                        (best[g] - random_returns[g]) for g in usable]
                       for s in seeds])
    interval = bootstrap.confidence_interval(
        scores, bootstrap.interquartile_mean, reps=reps, seed=seed)
    lines.append(f'| {label} | {len(seeds)} | {interval.point:.3f} '
                 f'[{interval.lower:.3f}, {interval.upper:.3f}] |')
  return '\n'.join(lines) + '\n'


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
  labels = {c.label: c for c in CONFIGS + OPTIONAL_CONFIGS}
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
  from scripts.analysis import minatar_report
  from scripts.experiments import minatar_random
  # pylint: enable=g-import-not-at-top
  planned = [(label, spec.game, spec.seed, spec.results_csv_path)
             for label, spec in runs]
  where = FLAGS.root_dir
  if FLAGS.evidence_dir:
    where = FLAGS.evidence_dir
    try:
      planned = [(label, game, seed, run_data.evidence_csv(
          FLAGS.evidence_dir, label, game, seed) or path)
                 for label, game, seed, path in planned]
    except ValueError as e:
      raise app.UsageError(f'--evidence_dir: {e}')
  if not any(os.path.exists(path) for _, _, _, path in planned):
    if FLAGS.evidence_dir:
      sys.exit(f'Error: --report: none of the {len(planned)} planned runs '
               f'has a results.csv in {where} (its sessions\' runs/<piece>/'
               '<configuration>/<agent>/<game>/seed_<s>/). Pass the '
               '--configs, --games and --seeds it holds.')
    sys.exit(f'Error: --report: none of the {len(planned)} planned runs has a '
             f'results.csv under {FLAGS.root_dir} (they would be '
             f'{os.path.relpath(planned[0][3], FLAGS.root_dir)} and the '
             'like). Pass the --root_dir the study ran in, with the same '
             '--configs, --games, --seeds and --loop.')
  try:
    # Every CSV is read before the random policy's measurement (seconds).
    for label, game, seed, path in planned:
      minatar_report.load_run(label, game, seed, path, FLAGS.num_iterations,
                              FLAGS.num_eval_frames)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  try:
    files.make_writable_directory(FLAGS.output_dir)
  except OSError as e:
    raise app.UsageError(f'--output_dir: cannot write in '
                         f'{FLAGS.output_dir!r} ({e}).')
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
  if FLAGS.loop == 'jitted':
    results = [minatar_report.load_run(label, game, seed, path,
                                       FLAGS.num_iterations,
                                       FLAGS.num_eval_frames)
               for label, game, seed, path in planned]
    random_returns = {r.game: r.mean for r in random_results}
    report = os.path.join(FLAGS.output_dir, 'report.md')
    with open(report) as f:
      text = f.read()
    text += '\n' + comparison_markdown(
        [r for r in results if r is not None], [c.label for c in configs],
        games, random_returns, FLAGS.bootstrap_reps)
    files.write_atomically(report, text)
  for path in written:
    print(path)


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  if not FLAGS.root_dir and not (FLAGS.report and FLAGS.evidence_dir):
    raise app.UsageError('--root_dir is required (or, with --report, '
                         '--evidence_dir).')
  if FLAGS.evidence_dir and not FLAGS.report:
    raise app.UsageError('--evidence_dir is read by --report only.')
  if FLAGS.loop == 'jitted':
    apply_jitted_defaults()
  configs, games, seeds = _validate()
  try:
    common = study_flags(FLAGS.num_iterations, FLAGS.num_train_frames,
                         FLAGS.num_eval_frames)
  except ValueError as e:
    raise app.UsageError(str(e))
  runs = plan(FLAGS.root_dir or FLAGS.evidence_dir, configs, games, seeds,
              FLAGS.k_stream_game, common)
  if FLAGS.report or not FLAGS.dry_run:  # Both run MinAtar games.
    try:
      minatar_env.check_installed()
    except minatar_env.NotInstalledError as e:
      sys.exit(f'Error: {e}')
  if FLAGS.report:
    _report(runs, configs, games)
    return
  if FLAGS.loop == 'jitted':
    _run_jitted(configs, games, seeds, common)
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
        'python -m scripts.benchmarks.bench_minatar).', flush=True)
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


def _run_jitted(configs, games, seeds, common) -> None:
  groups = plan_groups(FLAGS.root_dir, configs, games, seeds,
                       FLAGS.k_stream_game, common)
  todo = [g for g in groups if not all(
      sweep.is_finished(p, FLAGS.num_iterations) for p in g.csv_paths)]
  steps = FLAGS.num_iterations * FLAGS.num_train_frames
  print(f'MinAtar study, jitted loop: {len(configs)} configurations x '
        f'{len(games)} games x {len(seeds)} seeds of {steps:,} training steps '
        f'= {len(groups)} processes of {len(seeds)} vmapped seeds; '
        f'{len(todo)} to run, one at a time.', flush=True)
  if FLAGS.dry_run:
    for group in groups:
      print(f'{group.label}: {shlex.join(group.command)}')
    return
  started = time.time()
  try:
    failed = run_groups(todo, FLAGS.num_iterations)
  except KeyboardInterrupt:
    print('Interrupted: rerun the same command to resume the study.',
          file=sys.stderr)
    sys.exit(130)
  print(f'Study done in {(time.time() - started) / 3600:.2f} h; '
        f'{len(failed)} failed group(s){": " if failed else ""}'
        f'{", ".join(failed)}.')
  if failed:
    sys.exit(1)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
