"""Load Atari run results (ours and the shipped references) as per-run arrays.

A run is identified by what its rows say (agent, environment_name, seed), never
by its file name. Our run CSVs hold one run each; the reference files hold many.
"""

import csv
import dataclasses
import gzip
import importlib.resources
import math
import os
import sys
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

from zoo import settings as settings_lib

DEFAULT_NUM_ITERATIONS = settings_lib.Settings.num_iterations  # Atari's.
# Published runs report one evaluation per 1M training frames.
FRAMES_PER_ITERATION = 1_000_000
REFERENCE_FILES = {
    'paper': 'paper_runs.csv.gz',
    'dqn_zoo': 'dqn_zoo_runs.csv.gz',
}
HUMAN_RANDOM_FILE = 'atari_human_random.csv'
# MinAtar runs' environment_name starts with this (zoo.run_minatar's suite
# csv_prefix): they have no human, random or published scores.
MINATAR_PREFIX = 'minatar-'
_KEY_COLUMNS = ('agent', 'environment_name', 'seed')
_REQUIRED_COLUMNS = _KEY_COLUMNS + ('iteration', 'eval_episode_return')

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

  @property
  def key(self) -> RunKey:
    return (self.source, self.agent, self.game, self.seed)

  @property
  def last_iteration(self) -> int:
    return int(self.iteration[-1]) if self.iteration.size else -1

  def is_complete(self, num_iterations: int = DEFAULT_NUM_ITERATIONS) -> bool:
    """Return whether the run has every iteration 0..num_iterations."""
    present = set(int(i) for i in self.iteration)
    return all(i in present for i in range(num_iterations + 1))


def is_minatar(game: str) -> bool:
  """Return whether `game` (a CSV environment_name) is a MinAtar game."""
  return game.startswith(MINATAR_PREFIX)


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


def _open_text(path: str):
  if path.endswith('.gz'):
    return gzip.open(path, 'rt', newline='')
  return open(path, newline='')


def _to_float(text: str) -> float:
  try:
    return float(text)
  except ValueError:
    return math.nan


def read_runs_csv(path: str, source: str) -> List[Run]:
  """Read every run in one CSV (or .csv.gz) file.

  Raises:
    ValueError: if the file lacks the identifying columns, or repeats an
      iteration within a run.
  """
  with _open_text(path) as f:
    reader = csv.reader(f)
    try:
      header = next(reader)
    except StopIteration:
      return []
    missing = [c for c in _REQUIRED_COLUMNS if c not in header]
    if missing:
      raise ValueError(
          f'{path}: missing column(s) {missing}. Run CSVs must carry '
          f'{list(_REQUIRED_COLUMNS)} (see ARCHITECTURE.md, "Run results").')
    col = {name: i for i, name in enumerate(header)}
    i_agent, i_game, i_seed = (col[c] for c in _KEY_COLUMNS)
    i_iter, i_eval = col['iteration'], col['eval_episode_return']
    i_frame = col.get('frame')
    i_episodes = col.get('eval_num_episodes')
    grouped: Dict[Tuple[str, str, int],
                  List[Tuple[int, float, float, float]]] = {}
    for row in reader:
      if not row:
        continue
      iteration = int(float(row[i_iter]))
      frame = (_to_float(row[i_frame]) if i_frame is not None
               else float(iteration * FRAMES_PER_ITERATION))
      episodes = (_to_float(row[i_episodes]) if i_episodes is not None
                  else math.nan)
      key = (row[i_agent], row[i_game], int(float(row[i_seed])))
      grouped.setdefault(key, []).append(
          (iteration, frame, _to_float(row[i_eval]), episodes))
  runs = []
  for (agent, game, seed), rows in grouped.items():
    rows.sort(key=lambda r: r[0])
    iterations = np.array([r[0] for r in rows], dtype=np.int64)
    if np.any(np.diff(iterations) == 0):
      raise ValueError(f'{path}: run {agent}/{game}/seed {seed} repeats an '
                       'iteration; each iteration must have one row.')
    runs.append(Run(
        source=source, agent=agent, game=game, seed=seed,
        iteration=iterations,
        frame=np.array([r[1] for r in rows], dtype=np.float64),
        eval_return=np.array([r[2] for r in rows], dtype=np.float64),
        path=path,
        eval_num_episodes=(np.array([r[3] for r in rows], dtype=np.float64)
                           if i_episodes is not None else None)))
  return runs


def find_run_files(root: str) -> List[str]:
  """Return every *.csv and *.csv.gz file under `root`, sorted."""
  if not os.path.isdir(root):
    raise ValueError(f'--runs: {root!r} is not a directory.')
  found = []
  for dirpath, _, filenames in os.walk(root):
    for name in filenames:
      if name.endswith('.csv') or name.endswith('.csv.gz'):
        found.append(os.path.join(dirpath, name))
  return sorted(found)


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


def load_run_dir(root: str, source: str = 'ours') -> List[Run]:
  """Load every run CSV under `root`; warn about CSVs that are not runs."""
  runs = []
  for path in find_run_files(root):
    try:
      runs.extend(read_runs_csv(path, source))
    except ValueError as e:
      # Other CSVs may live in a runs tree; say so rather than guess.
      print(f'warning: skipping {e}', file=sys.stderr)
  if not runs:
    raise ValueError(f'--runs: no run CSV found under {root!r}.')
  return check_unique(runs)


def parse_runs_arg(arg: str) -> Tuple[str, str]:
  """Split a --runs value 'LABEL=DIR' or 'DIR' into (label, dir)."""
  if '=' in arg and not os.path.isdir(arg):
    label, path = arg.split('=', 1)
    return label, path
  return 'ours', arg


def load_reference(name: str) -> List[Run]:
  """Load a shipped reference run set: 'paper' or 'dqn_zoo'."""
  if name not in REFERENCE_FILES:
    raise ValueError(f'Unknown reference {name!r}; choose from '
                     f'{sorted(REFERENCE_FILES)}.')
  return read_runs_csv(reference_path(REFERENCE_FILES[name]), name)


def load_all_references(agents: Optional[Sequence[str]] = None) -> List[Run]:
  """Load both reference sets, keeping only `agents` if given."""
  runs = []
  for name in REFERENCE_FILES:
    runs.extend(load_reference(name))
  if agents is not None:
    known = sorted({r.agent for r in runs})
    unknown = [a for a in agents if a not in known]
    if unknown:
      raise ValueError(f'Unknown reference agent(s) {unknown}; known: {known}.')
    runs = [r for r in runs if r.agent in agents]
  return runs


def group_by_agent(runs: Iterable[Run]) -> Dict[Tuple[str, str], List[Run]]:
  """Return {(source, agent): runs}, in first-seen order."""
  groups: Dict[Tuple[str, str], List[Run]] = {}
  for run in runs:
    groups.setdefault((run.source, run.agent), []).append(run)
  return groups
