"""The MinAtar study's report: curves, final scores with CIs, K = 8 vs K = 1.

`write_report` takes a MinAtar campaign's planned runs (scripts.campaign.report),
as `load_run` read them, and writes report.md, final_scores.csv, runs.csv,
curves.png and k_streams.png (docs/experiments/minatar.md): per game and
configuration, over the complete seeds, the final and mean-over-iterations
evaluation returns with 95% bootstrap CIs beside the random policy's; the
wall time; with CR-DQN and QR-DQN-1 among the labels, CR-DQN - QR-DQN-1 per
game and their normalised IQM over games. Incomplete and missing runs are
listed, never averaged in.
"""

import datetime
import math
import os
import platform
from typing import Dict, List, NamedTuple, Optional, Sequence, Tuple

import numpy as np

from scripts.analysis import bootstrap
from scripts.analysis import compare
from scripts.analysis import plot_curves
from scripts.analysis import run_data
from scripts.analysis import tables
from zoo.storage import files

K_ONE_LABEL = 'CR-DQN'  # The K = 1 runs the K-stream check compares with.
COMPARED = ('CR-DQN', 'QR-DQN-1')  # The paper's question: Cramér vs QR.


class RandomReturn(NamedTuple):
  """A uniformly random policy's return on one game, per seed."""
  game: str
  seeds: List[int]
  returns: List[float]    # Per seed: mean over its complete episodes.
  episodes: List[int]     # Per seed: complete episodes.
  num_steps: int

  @property
  def mean(self) -> float:
    return float(np.mean(self.returns))


def random_markdown(results: Sequence[RandomReturn]) -> str:
  """Return the random policy's returns as a markdown table."""
  return '\n'.join(tables.markdown(
      ['game', 'random policy return (mean over seeds)', 'per seed',
       'episodes', 'steps per seed'],
      [[r.game, f'{r.mean:.2f}', ', '.join(f'{x:.2f}' for x in r.returns),
        sum(r.episodes), f'{r.num_steps:,}'] for r in results], 'lrlrr'))


def cpu_description() -> str:
  """Return this machine's CPU model and core count."""
  model = platform.processor() or platform.machine()
  try:
    with open('/proc/cpuinfo') as f:
      for line in f:
        if line.startswith('model name'):
          model = line.split(':', 1)[1].strip()
          break
  except OSError:
    pass
  return f'{model}, {os.cpu_count()} cores'


class RunResult(NamedTuple):
  """One planned run, as far as its CSV goes."""
  label: str
  game: str
  seed: int
  path: str
  complete: bool
  iteration: np.ndarray     # [T] int, sorted.
  steps: np.ndarray         # [T] training steps at each evaluation.
  eval_return: np.ndarray   # [T]
  train_return: np.ndarray  # [T] (NaN at iteration 0)
  phase_seconds: float

  @property
  def last_iteration(self) -> int:
    return int(self.iteration[-1]) if self.iteration.size else -1

  @property
  def final(self) -> float:
    return float(self.eval_return[-1])

  @property
  def mean_over_iterations(self) -> float:
    return float(np.mean(self.eval_return[self.iteration >= 1]))

  @property
  def final_train(self) -> float:
    return float(self.train_return[-1])


# The columns load_run reads.
_RUN_COLUMNS = ('iteration', 'frame', 'eval_episode_return',
                'train_episode_return', 'eval_frame_rate', 'train_frame_rate')


def load_run(label: str, game: str, seed: int, path: str,
             num_iterations: int, num_eval_frames: int) -> Optional[RunResult]:
  """Return a run's results up to `num_iterations`, or None if no CSV.

  Raises:
    ValueError: the CSV is not a run CSV, or is cut short or damaged.
  """
  if not os.path.exists(path):
    return None
  rows = run_data.read_rows(path, _RUN_COLUMNS)
  column = {c: np.array([run_data.to_float(r[c]) for r in rows])
            for c in _RUN_COLUMNS}
  order = np.argsort(column['iteration'], kind='stable')
  kept = order[(column['iteration'][order] >= 0) &
               (column['iteration'][order] <= num_iterations)]
  column = {c: v[kept] for c, v in column.items()}
  iteration = column['iteration'].astype(np.int64)
  steps = column['frame']
  trained = (np.diff(steps) / column['train_frame_rate'][1:])[iteration[1:] > 0]
  seconds = np.sum(num_eval_frames / column['eval_frame_rate']) + np.sum(
      trained)
  return RunResult(
      label, game, seed, path, set(range(num_iterations + 1)) <= set(
          iteration.tolist()), iteration, steps, column['eval_episode_return'],
      column['train_episode_return'],
      float(seconds) if np.isfinite(seconds) else math.nan)


def study_span(csv_paths: Sequence[str]
               ) -> Optional[Tuple[datetime.datetime, datetime.datetime]]:
  """Return (first run.log start, last CSV write) of the runs, if known.

  The campaign starts each attempt's block of run.log (beside the CSV) with
  '=== YYYY-mm-dd HH:MM:SS on HOST: COMMAND'.
  """
  starts, ends = [], []
  for path in csv_paths:
    if not os.path.exists(path):
      continue
    ends.append(datetime.datetime.fromtimestamp(os.path.getmtime(path)))
    try:
      with open(os.path.join(os.path.dirname(path), 'run.log')) as f:
        starts.append(datetime.datetime.strptime(f.readline()[:23],
                                                 '=== %Y-%m-%d %H:%M:%S'))
    except (OSError, ValueError):
      pass
  if not starts or not ends:
    return None
  return min(starts), max(ends)


def group_complete(results: Sequence[RunResult]
                   ) -> Dict[Tuple[str, str], List[RunResult]]:
  """Return {(label, game): complete runs}, in planned order."""
  groups: Dict[Tuple[str, str], List[RunResult]] = {}
  for r in results:
    group = groups.setdefault((r.label, r.game), [])  # Planned order.
    if r.complete:
      group.append(r)
  return groups


def final_rows(results: Sequence[RunResult], random_returns: Dict[str, float],
               reps: int, confidence: float, seed: int) -> List[Dict]:
  """Return one row per (configuration, game) over its complete runs."""
  rows = []
  for (label, game), runs in group_complete(results).items():
    if not runs:
      continue  # Listed with the runs not complete.
    final = bootstrap.mean_with_ci([r.final for r in runs], reps, confidence,
                                   seed)
    mean = bootstrap.mean_with_ci([r.mean_over_iterations for r in runs],
                                  reps, confidence, seed)
    random_return = random_returns.get(game, math.nan)
    rows.append({
        'configuration': label, 'game': game, 'seeds': len(runs),
        'seeds_list': ' '.join(str(r.seed) for r in runs),
        'final': final, 'mean_over_iterations': mean,
        'final_train': float(np.mean([r.final_train for r in runs])),
        'random': random_return,
        # Above random: the CI's lower end (the value with one seed) clears it.
        'above_random': bool((final.mean if math.isnan(final.lower)
                              else final.lower) > random_return),
    })
  return rows


FINAL_COLUMNS = (
    'game', 'configuration', 'seeds', 'seeds_list', 'final_mean',
    'final_ci_low', 'final_ci_high', 'mean_over_iterations_mean',
    'mean_over_iterations_ci_low', 'mean_over_iterations_ci_high',
    'final_train_mean', 'random_policy', 'above_random')


def _final_csv_row(row: Dict) -> Dict[str, str]:
  final, mean = row['final'], row['mean_over_iterations']
  return dict(zip(FINAL_COLUMNS, [
      row['game'], row['configuration'], row['seeds'], row['seeds_list'],
      *map(tables.number, (final.mean, final.lower, final.upper, mean.mean,
                           mean.lower, mean.upper, row['final_train'],
                           row['random'])),
      str(row['above_random']).lower()]))


RUN_COLUMNS = ('configuration', 'game', 'seed', 'state', 'last_iteration',
               'final_eval_return', 'mean_eval_return_over_iterations',
               'final_train_return', 'phase_hours', 'path')


def run_rows(planned: Sequence[Tuple[str, str, int, str]],
             results: Dict[Tuple[str, str, int], Optional[RunResult]]
             ) -> List[Dict[str, str]]:
  rows = []
  for label, game, seed, path in planned:
    r = results[(label, game, seed)]
    has = r is not None and r.iteration.size > 0
    numbers = ((r.final, r.mean_over_iterations if r.last_iteration >= 1
                else math.nan, r.final_train) if has else (math.nan,) * 3)
    rows.append(dict(zip(RUN_COLUMNS, [
        label, game, seed, 'missing' if r is None else
        'complete' if r.complete else 'incomplete',
        '' if r is None else r.last_iteration, *map(tables.number, numbers),
        f'{r.phase_seconds / 3600:.3f}' if has else '', path])))
  return rows


def k_stream_rows(results: Sequence[RunResult], game: str, k_label: str,
                  reps: int, confidence: float, seed: int) -> List[Dict]:
  """Return K = 1 vs K = 8 rows: the final and mean-over-iterations returns."""
  groups = group_complete(results)
  one, eight = (groups.get((label, game), []) for label in (K_ONE_LABEL,
                                                            k_label))
  if not one or not eight:
    return []
  rows = []
  for statistic in ('final', 'mean_over_iterations'):
    a, b = ([getattr(r, statistic) for r in runs] for runs in (eight, one))
    rows.append({'statistic': statistic,
                 'k1': bootstrap.mean_with_ci(b, reps, confidence, seed),
                 'k8': bootstrap.mean_with_ci(a, reps, confidence, seed),
                 'difference': bootstrap.difference_ci(a, b, reps, confidence,
                                                       seed)})
  return rows


def plot_curves_figure(results: Sequence[RunResult], labels: Sequence[str],
                       games: Sequence[str], random_returns: Dict[str, float],
                       path: str) -> Optional[str]:
  """Plot one panel per game, one line per configuration; None if no run."""
  groups = group_complete(results)
  games = [g for g in games if any(groups.get((l, g)) for l in labels)]
  if not games:
    return None
  fig, axes = plot_curves.panels(len(games), len(games), 4.5, 3.6)
  legend = {}  # First label of each configuration: {name: handle}.
  for ax, game in zip(axes, games):
    for i, label in enumerate(labels):
      runs = groups.get((label, game))
      if runs:  # Mean over seeds, min..max band.
        returns = np.stack([r.eval_return for r in runs])
        legend.setdefault(label, plot_curves.band(
            ax, runs[0].steps / 1e6, returns.mean(0), returns.min(0),
            returns.max(0), color=plot_curves.color(i), linewidth=2,
            label=f'{label} [{len(runs)} seed{"s" * (len(runs) > 1)}]'))
    if game in random_returns:
      legend.setdefault('random', ax.axhline(
          random_returns[game], color='grey', linestyle='--', linewidth=1.2,
          label='random policy'))
    ax.set(title=game, xlabel='training steps (millions)',
           ylabel='evaluation return')
    ax.grid(alpha=0.3)
  fig.legend(list(legend.values()), [h.get_label() for h in legend.values()],
             loc='lower center', ncol=min(len(legend), 4),
             bbox_to_anchor=(0.5, 1.0), fontsize=8)
  fig.tight_layout()
  return plot_curves.save(fig, path)[0]


def markdown(final: Sequence[Dict], k_rows: Sequence[Dict],
             k_stream: Optional[Tuple[str, str]],
             runs_table: Sequence[Dict[str, str]],
             random_results: Sequence[RandomReturn],
             num_iterations: int, num_train_frames: int, machine: str,
             confidence: float, figures: Sequence[str],
             span: Optional[Tuple[datetime.datetime, datetime.datetime]] = None
             ) -> str:
  """Return report.md."""
  pct = int(round(100 * confidence))
  complete = [r for r in runs_table if r['state'] == 'complete']
  hours = sum(float(r['phase_hours']) for r in runs_table if r['phase_hours'])
  lines = [
      '# MinAtar study report', '',
      f'{len(complete)} of {len(runs_table)} planned runs complete '
      f'({num_iterations} iterations of {num_train_frames:,} training steps; '
      'the evaluation after each iteration). Statistics over the complete '
      f'seeds: "final" is the evaluation return after the last iteration, '
      '"mean over iterations" the mean evaluation return over iterations '
      f'1..{num_iterations}; mean over seeds [{pct}% percentile bootstrap CI '
      'over seeds]. "above random": the lower CI end (one seed: the value) '
      'exceeds the random policy\'s return.', '']
  lines += tables.markdown(
      ['game', 'configuration', 'seeds', 'final eval return',
       'mean over iterations', 'final train return', 'random policy',
       'above random'],
      [[row['game'], row['configuration'], row['seeds'],
        bootstrap.cell_text(row['final']),
        bootstrap.cell_text(row['mean_over_iterations']),
        f'{row["final_train"]:.2f}', f'{row["random"]:.2f}',
        'yes' if row['above_random'] else 'no'] for row in final],
      'llrrrrrl')
  if k_rows:
    k_label, k_game = k_stream
    lines += ['', f'## K = 8 streams vs K = 1 ({k_game}, CR-DQN)', '']
    lines += tables.markdown(
        ['statistic', f'K = 1 ({K_ONE_LABEL})', f'K = 8 ({k_label})',
         'K = 8 minus K = 1'],
        [[row['statistic'].replace('_', ' ')] +
         [bootstrap.cell_text(row[c]) for c in ('k1', 'k8', 'difference')]
         for row in k_rows], 'lrrr')
  lines += ['', '## Random policy', '',
            random_markdown(random_results), '']
  lines += ['## Wall time', '',
            f'{hours:.2f} h of phases summed over the runs (from the CSVs\' '
            'frame rates; start-up and checkpoints not counted); machine: '
            f'{machine}.']
  if span:
    lines[-1] += (f' The study ran from {span[0]:%Y-%m-%d %H:%M} to '
                  f'{span[1]:%Y-%m-%d %H:%M} '
                  f'({(span[1] - span[0]).total_seconds() / 3600:.1f} h, '
                  'first run start to last CSV write).')
  lines.append('')
  unfinished = [r for r in runs_table if r['state'] != 'complete']
  if unfinished:
    lines += ['## Runs not complete (not in the tables)', ''] + tables.markdown(
        ['configuration', 'game', 'seed', 'state', 'last iteration'],
        [[r[c] for c in ('configuration', 'game', 'seed', 'state',
                         'last_iteration')] for r in unfinished],
        'llrlr') + ['']
  for figure in figures:
    lines.append(f'![{os.path.splitext(figure)[0]}]({figure})')
  return '\n'.join(lines) + '\n'


def write_report(planned: Sequence[Tuple[str, str, int, str]],
                 results: Dict[Tuple[str, str, int], Optional[RunResult]],
                 labels: Sequence[str], games: Sequence[str],
                 k_stream: Optional[Tuple[str, str]], output_dir: str, *,
                 num_iterations: int, num_train_frames: int, machine: str,
                 random_results: Sequence[RandomReturn],
                 reps: int = 50_000, confidence: float = 0.95,
                 seed: int = 0) -> List[str]:
  """Write the report files for the planned runs; return their paths.

  planned: (configuration label, game, seed, results CSV path) per run;
  results: load_run's of each (label, game, seed); labels and games: the main
  table's, in order; k_stream: (K = 8 label, game) of the K-stream check, or
  None; random_results: the random policy's return on every game (of `games`
  and the K-stream check), e.g. from scripts.experiments.minatar_random.
  """
  present = [r for r in results.values() if r is not None]
  all_games = list(dict.fromkeys(list(games) +
                                 ([k_stream[1]] if k_stream else [])))
  random_returns = {r.game: r.mean for r in random_results}
  missing = [g for g in all_games if g not in random_returns]
  if missing:
    raise ValueError(f'No random policy return for {", ".join(missing)}: '
                     'measure it (scripts.experiments.minatar_random) and '
                     'pass it in random_results.')
  main = [r for r in present if r.label in labels]
  final = final_rows(main, random_returns, reps, confidence, seed)
  k_rows = (k_stream_rows(present, k_stream[1], k_stream[0], reps, confidence,
                          seed) if k_stream else [])
  table = run_rows(planned, results)
  os.makedirs(output_dir, exist_ok=True)
  plots = [('curves.png', main, labels, games)]
  if k_stream:
    plots.append(('k_streams.png', present, [K_ONE_LABEL, k_stream[0]],
                  [k_stream[1]]))
  figures = [name for name, runs, plot_labels, plot_games in plots
             if plot_curves_figure(runs, plot_labels, plot_games,
                                   random_returns,
                                   os.path.join(output_dir, name))]
  for name, columns, rows in (
      ('final_scores.csv', FINAL_COLUMNS, [_final_csv_row(r) for r in final]),
      ('runs.csv', RUN_COLUMNS, table)):
    files.write_csv_atomically(os.path.join(output_dir, name), columns, rows)
  text = markdown(final, k_rows, k_stream, table, random_results,
                  num_iterations, num_train_frames, machine, confidence,
                  figures, study_span([p for _, _, _, p in planned]))
  if all(label in labels for label in COMPARED):
    text += '\n' + comparison_markdown(main, labels, games, random_returns,
                                       reps, seed)
  files.write_atomically(os.path.join(output_dir, 'report.md'), text)
  return [os.path.join(output_dir, name) for name in
          figures + ['final_scores.csv', 'runs.csv', 'report.md']]


def comparison_markdown(results, labels: Sequence[str], games: Sequence[str],
                        random_returns: Dict[str, float], reps: int,
                        seed: int = 0) -> str:
  """Return the report's CR-DQN - QR-DQN-1 and normalised-IQM sections.

  Over the complete RunResults; labels and games in order.
  """
  final = {key: {r.seed: r.final for r in runs}  # Of the complete runs.
           for key, runs in group_complete(results).items() if runs}
  a, b = COMPARED
  lines = [f'## {a} - {b} per game', '',
           'Final evaluation return, mean over seeds [95% percentile '
           'bootstrap CI] (seeds); the difference\'s CI resamples each '
           "configuration's seeds (scripts.analysis.compare on runs.csv).", '']
  sides = [compare.Side(label, {}, {g: list(final.get((label, g), {}).values())
                                    for g in games}) for label in COMPARED]
  lines += compare.comparison_lines(sides[:1], sides[1:], games,
                                    'eval_episode_return', reps)
  lines += ['', '## Aggregate over games', '',
            'Interquartile mean over seeds x games of the final return '
            'normalised per game, (score - random) / (best - random), where '
            "best is the best configuration's mean on that game; 95% "
            'stratified bootstrap CI (scripts.analysis.bootstrap). Only '
            'games where every configuration has complete runs, and only seeds '
            'complete on all of them.', '']
  usable = [g for g in games if g in random_returns and
            all((label, g) in final for label in labels)]
  best = {g: max(np.mean(list(final[(label, g)].values())) for label in labels)
          for g in usable}
  usable = [g for g in usable if best[g] != random_returns[g]]
  if not usable:
    return '\n'.join(lines + ['No game has complete runs of every '
                              'configuration yet.', '']) + '\n'
  lines += [f'Games: {", ".join(usable)}.', '']
  rows = []
  for label in labels:
    seeds = sorted(set.intersection(*[set(final[(label, g)])
                                      for g in usable]))
    if not seeds:
      rows.append([label, 0, '–'])
      continue
    scores = np.array([[(final[(label, g)][s] - random_returns[g]) /
                        (best[g] - random_returns[g]) for g in usable]
                       for s in seeds])
    interval = bootstrap.confidence_interval(
        scores, bootstrap.interquartile_mean, reps=reps, seed=seed)
    rows.append([label, len(seeds),
                 bootstrap.interval_text(*interval, digits=3)])
  lines += tables.markdown(['configuration', 'seeds',
                            'normalised IQM [95% CI]'], rows, 'lrl')
  return '\n'.join(lines) + '\n'
