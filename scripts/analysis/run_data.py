"""Load run results (ours and the shipped Atari references) as per-run arrays.

A run is identified by what its rows say (agent, environment_name, seed), never
by its file name, and its suite by its run.json, never by a name prefix. Our
run CSVs hold one run each; the reference files hold many.
"""

import csv
import dataclasses
import gzip
import importlib.resources
import math
import os
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

from absl import flags
import numpy as np

from zoo.configuration import settings as settings_lib
from zoo.storage import results_csv
from zoo.configuration import agent_registry
from zoo.storage import run_json

DEFAULT_NUM_ITERATIONS = settings_lib.Settings.num_iterations  # Atari's.
# Published runs report one evaluation per 1M training frames.
FRAMES_PER_ITERATION = 1_000_000
REFERENCE_FILES = {
    'paper': 'paper_runs.csv.gz',
    'dqn_zoo': 'dqn_zoo_runs.csv.gz',
}
HUMAN_RANDOM_FILE = 'atari_human_random.csv'
# A run's suite: MinAtar runs have no human, random or published scores.
SUITES = ('atari', 'minatar')
SUITE_FIX = ('pass --suite=atari or --suite=minatar, the suite of the runs '
             'written without a run.json')
_REQUIRED_COLUMNS = ('agent', 'environment_name', 'seed', 'iteration',
                     'eval_episode_return')
# What the tools say a run CSV is, when they find none.
RUN_CSV_HELP = (
    'A run CSV is the results.csv a run writes (python -m <agent>.run_atari '
    'or run_minatar, or python -m scripts.campaign under '
    'ROOT/<agent>/<game>/seed_<s>/), with the columns '
    f'{", ".join(_REQUIRED_COLUMNS)}.')
DAMAGED_CSV_FIX = (
    'The file is cut short or damaged: move it aside and rerun the run\'s '
    'command (or the campaign\'s), which rewrites its results.csv from its '
    'newest checkpoint.')


class NotRunCsvError(ValueError):
  """A CSV file that is not a run CSV (it lacks the identifying columns)."""


class DamagedRunCsvError(ValueError):
  """A run CSV whose rows cannot be read: cut short or damaged."""


RunKey = Tuple[str, str, str, int]  # (source, agent, game, seed)


@dataclasses.dataclass(frozen=True)
class Run:
  """One run's evaluation curve, sorted by iteration."""
  source: str        # where it comes from: 'paper', 'dqn_zoo' or a --runs label
  agent: str
  game: str
  seed: int
  iteration: np.ndarray    # [T] int
  frame: np.ndarray        # [T] float
  eval_return: np.ndarray  # [T] float
  path: str
  # [T] float (NaN where unknown), when the file has the column: 0 marks a
  # partial return (no evaluation episode completed).
  eval_num_episodes: Optional[np.ndarray] = None
  # [T] float, when the file has the column (NaN at iteration 0).
  train_return: Optional[np.ndarray] = None
  # 'atari' or 'minatar': its run.json's, else the reader's; None: unknown.
  suite: Optional[str] = None
  # Its run.json's settings; None without one (published runs, bare CSVs).
  settings: Optional[Dict] = None

  @property
  def key(self) -> RunKey:
    return (self.source, self.agent, self.game, self.seed)

  @property
  def last_iteration(self) -> int:
    return int(self.iteration[-1]) if self.iteration.size else -1

  def value_at(self, iteration: int, field: str = 'eval_return'
               ) -> Optional[float]:
    """Return a curve's value at `iteration` (None: absent or not finite)."""
    curve, at = getattr(self, field), np.flatnonzero(self.iteration ==
                                                     iteration)
    if curve is None or not at.size or not np.isfinite(curve[at[0]]):
      return None
    return float(curve[at[0]])

  def is_complete(self, num_iterations: int = DEFAULT_NUM_ITERATIONS) -> bool:
    """Return whether the run has every iteration 0..num_iterations."""
    return set(range(num_iterations + 1)) <= set(self.iteration.tolist())


def define_suite_flag() -> None:
  """Define --suite, the suite of runs that have no run.json."""
  flags.DEFINE_enum('suite', None, SUITES, 'The suite of the runs whose CSV '
                    'has no run.json beside it (written without one); a '
                    "run.json's suite wins.")


def check_suites(runs: Sequence['Run']) -> List['Run']:
  """Return the runs as a list; raise ValueError if one's suite is unknown."""
  unknown = [r.path for r in runs if r.suite not in SUITES]
  if unknown:
    raise ValueError(f'{len(unknown)} run(s) have no run.json recording their '
                     f'suite (the first: {unknown[0]}): {SUITE_FIX}.')
  return list(runs)


def reference_path(filename: str) -> str:
  """Return the path of a file shipped in zoo/reference/."""
  return str(importlib.resources.files('zoo') / 'reference' / filename)


def load_human_random(path: Optional[str] = None) -> Dict[str, Tuple[float, float]]:
  """Return {game: (random, human)} from atari_human_random.csv."""
  path = path or reference_path(HUMAN_RANDOM_FILE)
  with open(path, newline='') as f:
    return {row['environment_name']: (float(row['random']), float(row['human']))
            for row in csv.DictReader(f)}


def human_normalized(game: str, score, human_random: Dict[str, Tuple[float, float]]):
  """Return (score - random) / (human - random) for `game`."""
  if game not in human_random:
    raise ValueError(
        f'Unknown game {game!r}: it has no human/random scores. Known games: '
        f'{", ".join(sorted(human_random))}.')
  random_score, human_score = human_random[game]
  return (np.asarray(score, dtype=np.float64) - random_score) / (
      human_score - random_score)


def to_float(text: Optional[str]) -> float:
  """Return a CSV cell's number (NaN where empty or not a number)."""
  try:
    return float(text)
  except (TypeError, ValueError):
    return math.nan


def read_rows(path: str, columns: Sequence[str] = _REQUIRED_COLUMNS
              ) -> List[Dict[str, str]]:
  """Return a run CSV's (or .csv.gz's) rows as dicts of strings.

  The one reader of run CSVs: zoo.storage.results_csv's rule tells a damaged
  row, as runs do.

  Raises:
    NotRunCsvError: the file lacks one of `columns`.
    DamagedRunCsvError: a row is cut short or unreadable (a truncated file).
  """
  try:
    with (gzip.open(path, 'rt', newline='') if path.endswith('.gz')
          else open(path, newline='')) as f:
      lines = results_csv.checked_rows(f, path)
      header = next(lines, (0, None))[1]
      if header is None:
        return []
      missing = [c for c in columns if c not in header]
      if missing:
        raise NotRunCsvError(
            f'{path}: missing column(s) {missing}: not a run CSV. Run CSVs '
            f'must carry {list(columns)} (see ARCHITECTURE.md, "Run '
            'results").')
      return [dict(zip(header, row)) for _, row in lines]
  except results_csv.DamagedError as e:
    raise DamagedRunCsvError(f'{e}. {DAMAGED_CSV_FIX}') from None
  except (OSError, EOFError, UnicodeDecodeError, csv.Error) as e:
    raise DamagedRunCsvError(f'{path}: cannot be read ({e}). '
                             f'{DAMAGED_CSV_FIX}') from e


def iterations(path: str) -> List[int]:
  """Return the iterations a run CSV holds ([]: no file, or a damaged one)."""
  try:
    return [int(float(row['iteration']))
            for row in read_rows(path, ('iteration',))]
  except ValueError:
    return []


def read_runs_csv(path: str, source: str,
                  suite: Optional[str] = None) -> List[Run]:
  """Read every run in one CSV (or .csv.gz) file.

  Their suite is the one the run.json beside the file records, else `suite`;
  with a run.json, a run's agent is the preset its settings match (else the
  CSV's agent, its package).

  Raises:
    NotRunCsvError: the file lacks the identifying columns.
    DamagedRunCsvError: a row is cut short or unreadable (a truncated file).
    ValueError: a run repeats an iteration.
  """
  grouped: Dict[Tuple[str, str, int], List[Dict[str, str]]] = {}
  for row in read_rows(path):
    key = (row['agent'], row['environment_name'], int(float(row['seed'])))
    grouped.setdefault(key, []).append(row)
  runs = []
  try:  # The suite that the run.json beside the file records wins.
    data = run_json.read(run_json.path_next_to(path)) or {}
  except (OSError, ValueError):
    data = {}
  suite = data.get('suite') or suite
  for (agent, game, seed), rows in grouped.items():
    if data.get('settings'):  # Our run: named by its preset (IQN, CR-IQN).
      agent = agent_registry.preset_of(agent, data['settings']) or agent
    rows.sort(key=lambda r: int(float(r['iteration'])))
    iterations = np.array([int(float(r['iteration'])) for r in rows],
                          dtype=np.int64)
    if np.any(np.diff(iterations) == 0):
      raise ValueError(f'{path}: run {agent}/{game}/seed {seed} repeats an '
                       'iteration; each iteration must have one row.')

    def column(name, rows=rows):  # None: the file has no such column.
      return (np.array([to_float(r[name]) for r in rows])
              if name in rows[0] else None)
    frame = column('frame')
    runs.append(Run(
        source=source, agent=agent, game=game, seed=seed,
        iteration=iterations,
        # Published runs have no frame column: one iteration per 1M frames.
        frame=(iterations * float(FRAMES_PER_ITERATION) if frame is None
               else frame),
        eval_return=column('eval_episode_return'), path=path,
        eval_num_episodes=column('eval_num_episodes'),
        train_return=column('train_episode_return'), suite=suite,
        settings=data.get('settings')))
  return runs


def find_run_files(root: str) -> List[str]:
  """Return every *.csv and *.csv.gz file under `root`, sorted."""
  if not os.path.isdir(root):
    raise ValueError(f'--runs: {root!r} does not exist or is not a directory; '
                     'pass the directory the runs were written to (a '
                     'campaign\'s folder, e.g. --runs=runs/atari57) or one '
                     'run CSV.')
  return sorted(os.path.join(d, name) for d, _, names in os.walk(root)
                for name in names if name.endswith(('.csv', '.csv.gz')))


def check_unique(runs: Iterable[Run]) -> List[Run]:
  """Return the runs as a list; raise if two runs share (source, agent, game, seed)."""
  seen: Dict[RunKey, Run] = {}
  for run in runs:
    if run.key in seen:
      raise ValueError(
          f'Two runs claim agent={run.agent} game={run.game} seed={run.seed}: '
          f'{seen[run.key].path} and {run.path}. Keep one, or pass them as '
          'separate labelled sources (--runs=LABEL=DIR).')
    seen[run.key] = run
  return list(seen.values())


def load_run_dir(root: str, source: str = 'ours',
                 suite: Optional[str] = None) -> List[Run]:
  """Load every run CSV under `root`; warn about CSVs that are not runs.

  A run's suite is its run.json's, else `suite`.

  Raises:
    ValueError: no run CSV under `root` (the message says what one is), a
      damaged run CSV (DamagedRunCsvError), or two files of one run.
  """
  paths = find_run_files(root)
  runs, skipped = [], []
  for path in paths:
    try:
      found = read_runs_csv(path, source, suite)
    except NotRunCsvError as e:
      # Other CSVs may live in a runs tree; say so rather than guess.
      skipped.append(str(e))
      continue
    if not found:
      skipped.append(f'{path}: no rows')
    runs.extend(found)
  if not runs:
    more = f'; and {len(skipped) - 1} more' if len(skipped) > 1 else ''
    problem = (f'none of the {len(paths)} CSV file(s) under {root!r} is a run '
               f'CSV ({skipped[0]}{more})' if paths
               else f'{root!r} holds no CSV file')
    raise ValueError(f'--runs: {problem}. {RUN_CSV_HELP} Pass the directory '
                     'the runs were written to (a campaign\'s folder, e.g. '
                     '--runs=runs/atari57).')
  for reason in skipped:
    print(f'warning: skipping {reason}', file=sys.stderr)
  return check_unique(runs)


def parse_runs_arg(arg: str) -> Tuple[str, str]:
  """Split a --runs value 'LABEL=PATH' or 'PATH' into (label, path)."""
  if '=' in arg and not os.path.exists(arg):
    label, path = arg.split('=', 1)
    return label, path
  return 'ours', arg


def check_runs_args(args: Sequence[str]) -> List[Tuple[str, str]]:
  """Return the (label, path) of --runs values; raise if a path is none."""
  parsed = [parse_runs_arg(arg) for arg in args]
  for _, path in parsed:
    if not os.path.isfile(path):
      find_run_files(path)
  return parsed


def load_runs_args(args: Sequence[str],
                   suite: Optional[str] = None) -> List[Run]:
  """Load the runs of --runs values, LABEL=PATH or PATH (a directory tree of
  run CSVs or one run CSV); check every PATH first. Each run's source is its
  LABEL ('ours' without one), its suite its run.json's, else `suite`.
  """
  runs = []
  for label, path in check_runs_args(args):
    found = (load_run_dir(path, label, suite) if os.path.isdir(path)
             else read_runs_csv(path, label, suite))
    if not found:
      raise ValueError(f'--runs: {path!r} holds no run rows. {RUN_CSV_HELP}')
    runs += found
  return runs


def load_reference(name: str) -> List[Run]:
  """Load a shipped reference run set: 'paper' or 'dqn_zoo'."""
  if name not in REFERENCE_FILES:
    raise ValueError(f'Unknown reference {name!r}; choose from '
                     f'{sorted(REFERENCE_FILES)}.')
  return read_runs_csv(reference_path(REFERENCE_FILES[name]), name, 'atari')


def load_with_references(runs_args: Sequence[str],
                         reference_agents: Optional[Sequence[str]] = None,
                         suite: Optional[str] = None) -> List[Run]:
  """Load --runs values, then the references of `reference_agents` (None:
  all; no name: none); check that no two runs clash and every suite is known.
  """
  runs = load_runs_args(runs_args, suite)
  agents = (None if reference_agents is None
            else [a for a in reference_agents if a])
  if agents is None or agents:
    references = [run for name in REFERENCE_FILES
                  for run in load_reference(name)]
    known = sorted({r.agent for r in references})
    unknown = [a for a in agents or () if a not in known]
    if unknown:
      raise ValueError(f'Unknown reference agent(s) {unknown}; known: {known}.')
    runs += [r for r in references if agents is None or r.agent in agents]
  return check_suites(check_unique(runs))


def group_by_agent(runs: Iterable[Run]) -> Dict[Tuple[str, str], List[Run]]:
  """Return {(source, agent): runs}, in first-seen order."""
  groups: Dict[Tuple[str, str], List[Run]] = {}
  for run in runs:
    groups.setdefault((run.source, run.agent), []).append(run)
  return groups
