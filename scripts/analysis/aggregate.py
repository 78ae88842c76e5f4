r"""Summarise Atari-57 results: best-agent median, and median/IQM/mean with 95% CIs.

  python -m scripts.analysis.aggregate --reference
  python -m scripts.analysis.aggregate --runs=runs/ --output_dir=results/

For every agent (ours, and the shipped references), over the best
human-normalised evaluation return of each run (iterations 0..num_iterations):
the best-agent summary (per seed the median over games, then the mean over
seeds: the number papers report), and the median, IQM and mean over the
[seeds, games] matrix with stratified-bootstrap percentile CIs (rliable's).
Only agents complete on a full grid get CIs; 'subset': fewer games than the
full set; 'partial' (runs incomplete or missing): apart, best so far, no CIs.
MinAtar runs (their run.json's suite, or --suite) have no human scores: a
table of their own gives their raw returns (best, with a CI over seeds; last).
"""

import dataclasses
import math
import os
import sys
import warnings
from typing import Dict, List, Optional, Sequence, Tuple

from absl import app
from absl import flags
import numpy as np

from scripts.analysis import bootstrap
from scripts.analysis import run_data
from scripts.analysis import tables
from zoo.storage import files
from zoo.configuration import cli

FLAGS = flags.FLAGS


def define_flags() -> None:
  """Define this entry point's flags (only when run, to avoid flag clashes)."""
  flags.DEFINE_multi_string(
      'runs', [], 'Directory tree of our run CSVs, as DIR or LABEL=DIR (LABEL '
      'names the source column); repeatable.')
  flags.DEFINE_bool(
      'reference', False, 'Summarise the shipped reference runs (also shown '
      'beside --runs).')
  flags.DEFINE_list(
      'reference_agents', None, 'Reference agents to show (default: all; '
      'empty string: none).')
  flags.DEFINE_integer(
      'num_iterations', run_data.DEFAULT_NUM_ITERATIONS,
      'A run is complete when it has iterations 0..num_iterations; best scores '
      'are taken over those iterations.')
  flags.DEFINE_integer(
      'num_games', 57, 'Games in a full set; fewer gives status "subset".')
  flags.DEFINE_string(
      'output_dir', None, 'Write summary.csv and summary.md here.')
  flags.DEFINE_integer(
      'bootstrap_reps', 50_000, 'Bootstrap resamples (rliable default 50000).')
  flags.DEFINE_float('confidence', 0.95, 'CI coverage.')
  flags.DEFINE_integer('seed', 0, 'Seed of the bootstrap.')
  run_data.define_suite_flag()


METRICS = ('best_agent_summary', 'median', 'iqm', 'mean')
STATUS_COMPLETE, STATUS_SUBSET, STATUS_PARTIAL = 'complete', 'subset', 'partial'


@dataclasses.dataclass
class AgentSummary:
  """One row of the summary table; scores are fractions of human (1 = 100%)."""
  source: str
  agent: str
  status: str
  num_games: int
  num_seeds: int
  runs_complete: int
  runs_incomplete: int
  runs_missing: int
  point: Dict[str, float]
  ci: Dict[str, Tuple[float, float]]  # empty for partial agents


def best_scores(runs: Sequence[run_data.Run], human_random, num_iterations: int
                ) -> Tuple[np.ndarray, List[int], List[str]]:
  """Return the best human-normalised scores [seeds, games] (NaN where no run)."""
  seeds = sorted({r.seed for r in runs})
  games = sorted({r.game for r in runs})
  matrix = np.full((len(seeds), len(games)), np.nan)
  for run in runs:
    best = _best(run, num_iterations)
    if best is not None:
      matrix[seeds.index(run.seed), games.index(run.game)] = (
          run_data.human_normalized(run.game, best, human_random))
  return matrix, seeds, games


def _best(run: run_data.Run, num_iterations: int) -> Optional[float]:
  """Return a run's best evaluation return up to num_iterations (None: none)."""
  values = run.eval_return[run.iteration <= num_iterations]
  values = values[np.isfinite(values)]
  return float(np.max(values)) if values.size else None


def _nan_aggregates(matrix: np.ndarray) -> Dict[str, float]:
  """Return the metrics over the available scores of a partial matrix."""
  present = matrix[np.isfinite(matrix)]
  if present.size == 0:
    return {m: math.nan for m in METRICS}
  with warnings.catch_warnings():
    # A missing seed row or game column is expected in a partial grid.
    warnings.simplefilter('ignore', category=RuntimeWarning)
    return {
        'best_agent_summary': float(np.nanmean(np.nanmedian(matrix, axis=1))),
        'median': float(np.nanmedian(np.nanmean(matrix, axis=0))),
        'iqm': float(bootstrap.interquartile_mean(present[None, :])),
        'mean': float(np.nanmean(np.nanmean(matrix, axis=0))),
    }


def summarise_agent(runs: Sequence[run_data.Run], human_random,
                    num_iterations: int = run_data.DEFAULT_NUM_ITERATIONS,
                    num_games: int = 57, reps: int = 50_000,
                    confidence: float = 0.95, seed: int = 0) -> AgentSummary:
  """Summarise the runs of one (source, agent)."""
  if not runs:
    raise ValueError('summarise_agent needs at least one run.')
  sources = {(r.source, r.agent) for r in runs}
  if len(sources) != 1:
    raise ValueError(f'summarise_agent got several agents: {sorted(sources)}.')
  source, agent = sources.pop()
  matrix, seeds, games = best_scores(runs, human_random, num_iterations)
  complete = [r.is_complete(num_iterations) for r in runs]
  runs_complete = int(sum(complete))
  runs_missing = matrix.size - len(runs)
  full_grid = runs_complete == matrix.size and np.all(np.isfinite(matrix))
  status = (STATUS_PARTIAL if not full_grid else
            STATUS_SUBSET if len(games) < num_games else STATUS_COMPLETE)
  intervals = {name: bootstrap.confidence_interval(
      matrix, bootstrap.AGGREGATES[name], reps=reps, confidence=confidence,
      seed=seed) for name in (METRICS if full_grid else ())}
  point = ({n: i.point for n, i in intervals.items()} if full_grid
           else _nan_aggregates(matrix))
  ci = {n: (i.lower, i.upper) for n, i in intervals.items()}
  return AgentSummary(source=source, agent=agent, status=status,
                      num_games=len(games), num_seeds=len(seeds),
                      runs_complete=runs_complete,
                      runs_incomplete=len(runs) - runs_complete,
                      runs_missing=runs_missing, point=point, ci=ci)


def summarise(runs: Sequence[run_data.Run], human_random=None, **kwargs
              ) -> List[AgentSummary]:
  """Summarise every (source, agent) of the Atari runs, in first-seen order.

  MinAtar runs are left out (see summarise_minatar).
  """
  human_random = human_random or run_data.load_human_random()
  atari = [r for r in run_data.check_suites(runs) if r.suite == 'atari']
  return [summarise_agent(group, human_random, **kwargs)
          for group in run_data.group_by_agent(atari).values()]


@dataclasses.dataclass
class RawSummary:
  """One MinAtar row: raw returns of one agent on one game."""
  source: str
  agent: str
  game: str
  iterations: Tuple[int, int]  # Min and max last iteration over seeds.
  best: bootstrap.Cell         # Each run's best: mean over seeds, its CI.
  last: float                  # Mean over seeds of the last return.


def summarise_minatar(runs: Sequence[run_data.Run],
                      num_iterations: int = run_data.DEFAULT_NUM_ITERATIONS,
                      reps: int = 50_000, confidence: float = 0.95,
                      seed: int = 0) -> List[RawSummary]:
  """Summarise the MinAtar runs per (source, agent, game), in raw returns."""
  groups: Dict[Tuple[str, str, str], List[run_data.Run]] = {}
  for run in run_data.check_suites(runs):
    if run.suite == 'minatar' and _best(run, num_iterations) is not None:
      groups.setdefault((run.source, run.agent, run.game), []).append(run)
  rows = []
  for (source, agent, game), group in groups.items():
    kept = [r.iteration <= num_iterations for r in group]
    last = [int(r.iteration[k][-1]) for r, k in zip(group, kept)]
    rows.append(RawSummary(
        source, agent, game, (min(last), max(last)),
        bootstrap.mean_with_ci([_best(r, num_iterations) for r in group], reps,
                               confidence, seed),
        float(np.mean([r.eval_return[k][-1] for r, k in zip(group, kept)]))))
  return rows


def minatar_markdown(rows: Sequence[RawSummary], confidence: float = 0.95
                     ) -> str:
  """Return the MinAtar table (raw returns), or '' if there is none."""
  if not rows:
    return ''
  pct = int(round(100 * confidence))
  text = ('\n**MinAtar runs** (raw returns: MinAtar has no human scores, so '
          'these are not comparable with the rows above). Best: the maximum '
          'evaluation return over a run\'s iterations, mean over seeds '
          f'[{pct}% bootstrap CI over seeds]; last: the last iteration\'s '
          'return, mean over seeds. `python -m scripts.campaign '
          '--campaign=minatar_study --report=DIR` gives the study\'s full report.\n\n')
  return text + '\n'.join(tables.markdown(
      ['source', 'agent', 'game', 'seeds', 'last iteration',
       'best return [CI]', 'last return'],
      [[r.source, r.agent, r.game, r.best.num_seeds,
        '-'.join(str(i) for i in sorted(set(r.iterations))),
        bootstrap.cell_text(r.best), f'{r.last:.2f}'] for r in rows],
      'lllrrrr')) + '\n'


MINATAR_CSV_COLUMNS = ('source', 'agent', 'game', 'num_seeds',
                       'last_iteration_min', 'last_iteration_max',
                       'best_return', 'best_return_ci_low',
                       'best_return_ci_high', 'last_return')


CSV_COLUMNS = (
    ['source', 'agent', 'status', 'num_games', 'num_seeds', 'runs_complete',
     'runs_incomplete', 'runs_missing'] +
    [f'{m}{suffix}' for m in METRICS for suffix in ('', '_ci_low', '_ci_high')])


def to_csv_rows(summaries: Sequence[AgentSummary]) -> List[Dict[str, str]]:
  """Return CSV rows (scores as fractions of human, CIs blank for partial)."""
  return [dict(zip(CSV_COLUMNS, [
      s.source, s.agent, s.status, s.num_games, s.num_seeds, s.runs_complete,
      s.runs_incomplete, s.runs_missing] + [
          tables.number(x) for m in METRICS
          for x in (s.point[m], *s.ci.get(m, (math.nan, math.nan)))]))
          for s in summaries]


def _pct(value: float, ci: Optional[Tuple[float, float]]) -> str:
  text = f'{100 * value:.1f}'
  if ci:
    text += f' [{100 * ci[0]:.1f}, {100 * ci[1]:.1f}]'
  return text


def to_markdown(summaries: Sequence[AgentSummary], confidence: float = 0.95,
                num_iterations: int = run_data.DEFAULT_NUM_ITERATIONS) -> str:
  """Return the summary as Markdown tables: full/subset agents, then partial ones."""
  pct = int(round(100 * confidence))
  full = [s for s in summaries if s.status != STATUS_PARTIAL]
  partial = [s for s in summaries if s.status == STATUS_PARTIAL]
  text = ('Human-normalised best scores (max over iterations '
          f'0..{num_iterations}). Best-agent median: per seed the median over '
          'games, then the mean over seeds. Median/IQM/mean: rliable aggregates '
          f'over the [seeds, games] matrix, {pct}% stratified-bootstrap '
          'percentile CIs. status "subset": fewer games than the full set.\n\n')
  if full:
    text += '\n'.join(tables.markdown(
        ['source', 'agent', 'status', 'games', 'seeds',
         f'best-agent median % [{pct}% CI]', 'median % [CI]', 'IQM % [CI]',
         'mean % [CI]'],
        [[s.source, s.agent, s.status, s.num_games, s.num_seeds] +
         [_pct(s.point[m], s.ci.get(m)) for m in METRICS] for s in full],
        'lllrrrrrr')) + '\n'
  if partial:
    text += ('\n**Partial agents** (some runs incomplete or missing; '
             'best-so-far scores, no CIs, not comparable with the rows above):'
             '\n\n') + '\n'.join(tables.markdown(
                 ['source', 'agent', 'games', 'seeds', 'runs complete',
                  'runs incomplete', 'runs missing',
                  'best-agent median % so far', 'median %', 'IQM %',
                  'mean %'],
                 [[s.source, s.agent, s.num_games, s.num_seeds,
                   s.runs_complete, s.runs_incomplete, s.runs_missing] +
                  [_pct(s.point[m], None) for m in METRICS]
                  for s in partial], 'llrrrrrrrrr')) + '\n'
  return text


def write_outputs(summaries: Sequence[AgentSummary], output_dir: str,
                  markdown: str, minatar: Sequence[RawSummary] = ()
                  ) -> Tuple[str, ...]:
  """Write summary.csv, summary.md (and minatar_summary.csv); return paths."""
  os.makedirs(output_dir, exist_ok=True)
  paths = [os.path.join(output_dir, name) for name in (
      'summary.csv', 'summary.md', 'minatar_summary.csv')]
  files.write_csv_atomically(paths[0], CSV_COLUMNS, to_csv_rows(summaries))
  files.write_atomically(paths[1], markdown)
  if minatar:
    files.write_csv_atomically(paths[2], MINATAR_CSV_COLUMNS, [
        dict(zip(MINATAR_CSV_COLUMNS, [
            r.source, r.agent, r.game, r.best.num_seeds, *r.iterations,
            *map(tables.number, (r.best.mean, r.best.lower, r.best.upper,
                                 r.last))])) for r in minatar])
  return tuple(paths[:3 if minatar else 2])


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  if not FLAGS.runs and not FLAGS.reference:
    raise app.UsageError('Pass --runs=DIR (our runs, shown beside the '
                         'references) or --reference (references only).')
  # Check the inputs before the slow bootstrap.
  try:
    runs = run_data.load_with_references(FLAGS.runs, FLAGS.reference_agents,
                                         FLAGS.suite)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  summaries = summarise(
      runs, num_iterations=FLAGS.num_iterations, num_games=FLAGS.num_games,
      reps=FLAGS.bootstrap_reps, confidence=FLAGS.confidence,
      seed=FLAGS.seed)
  minatar = summarise_minatar(runs, FLAGS.num_iterations, FLAGS.bootstrap_reps,
                              FLAGS.confidence, FLAGS.seed)
  markdown = (to_markdown(summaries, FLAGS.confidence, FLAGS.num_iterations)
              + minatar_markdown(minatar, FLAGS.confidence))
  print(markdown)
  if FLAGS.output_dir:
    for path in write_outputs(summaries, FLAGS.output_dir, markdown, minatar):
      print(f'wrote {path}', file=sys.stderr)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
