r"""Summarise Atari-57 results: best-agent median, and median/IQM/mean with 95% CIs.

  python -m scripts.analysis.aggregate --reference
  python -m scripts.analysis.aggregate --runs=runs/ --output_dir=results/

Per agent (ours and the shipped references), over each run's best
human-normalised evaluation return: the best-agent summary and rliable's
median, IQM and mean with stratified-bootstrap CIs; agents with runs
incomplete or missing come apart, without CIs (docs/experiments/atari57.md).
MinAtar runs have no human scores: the error that refuses them names the
tools that summarise them.
"""

import dataclasses
import math
import os
import sys
import warnings
from typing import Dict, List, Sequence, Tuple

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
    values = run.eval_return[run.iteration <= num_iterations]
    values = values[np.isfinite(values)]
    if values.size:
      matrix[seeds.index(run.seed), games.index(run.game)] = (
          run_data.human_normalized(run.game, values.max(), human_random))
  return matrix, seeds, games


def _nan_aggregates(matrix: np.ndarray) -> Dict[str, float]:
  """Return the metrics over the available scores of a partial matrix."""
  present = matrix[np.isfinite(matrix)]
  if present.size == 0:
    return {m: math.nan for m in METRICS}
  with warnings.catch_warnings(action='ignore', category=RuntimeWarning):
    # A missing seed row or game column is expected in a partial grid.
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
  runs_complete = sum(r.is_complete(num_iterations) for r in runs)
  full_grid = runs_complete == matrix.size and np.all(np.isfinite(matrix))
  status = (STATUS_PARTIAL if not full_grid else
            STATUS_SUBSET if len(games) < num_games else STATUS_COMPLETE)
  intervals = {name: bootstrap.confidence_interval(
      matrix, bootstrap.AGGREGATES[name], reps=reps, confidence=confidence,
      seed=seed) for name in (METRICS if full_grid else ())}
  point = ({n: i.point for n, i in intervals.items()} if full_grid
           else _nan_aggregates(matrix))
  ci = {n: (i.lower, i.upper) for n, i in intervals.items()}
  return AgentSummary(source, agent, status, len(games), len(seeds),
                      runs_complete, len(runs) - runs_complete,
                      matrix.size - len(runs), point, ci)


# The tools that summarise MinAtar runs, which have no human scores.
MINATAR_TOOLS = (
    'python -m scripts.analysis.compare --a=LABEL=DIR --b=LABEL=DIR (A vs B '
    'per game, bootstrap CIs), python -m scripts.analysis.plot_curves '
    '--runs=DIR --output_dir=OUT (raw-return curves) or python -m '
    "scripts.campaign --campaign=minatar_study --report=DIR (the study's "
    'report)')


def summarise(runs: Sequence[run_data.Run], human_random=None, **kwargs
              ) -> List[AgentSummary]:
  """Summarise every (source, agent) of the Atari runs, in first-seen order.

  Raises:
    ValueError: a run's suite is unknown, or a run is a MinAtar one.
  """
  minatar = [r.path for r in run_data.check_suites(runs)
             if r.suite == 'minatar']
  if minatar:
    raise ValueError(
        f'{len(minatar)} MinAtar run(s) (the first: {minatar[0]}): aggregate '
        'normalises Atari returns by human scores, which MinAtar has none '
        f'of. Summarise MinAtar runs with {MINATAR_TOOLS}.')
  human_random = human_random or run_data.load_human_random()
  return [summarise_agent(group, human_random, **kwargs)
          for group in run_data.group_by_agent(runs).values()]


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


def _pct(point: float, *ci: float) -> str:
  return bootstrap.interval_text(*(100 * x for x in (point, *ci)), digits=1)


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
         [_pct(s.point[m], *s.ci.get(m, ())) for m in METRICS] for s in full],
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
                  [_pct(s.point[m]) for m in METRICS]
                  for s in partial], 'llrrrrrrrrr')) + '\n'
  return text


def write_outputs(summaries: Sequence[AgentSummary], output_dir: str,
                  markdown: str) -> Tuple[str, str]:
  """Write summary.csv and summary.md; return their paths."""
  os.makedirs(output_dir, exist_ok=True)
  paths = (os.path.join(output_dir, 'summary.csv'),
           os.path.join(output_dir, 'summary.md'))
  files.write_csv_atomically(paths[0], CSV_COLUMNS, to_csv_rows(summaries))
  files.write_atomically(paths[1], markdown)
  return paths


def main(unused_argv):
  if not FLAGS.runs and not FLAGS.reference:
    raise app.UsageError('Pass --runs=DIR (our runs, shown beside the '
                         'references) or --reference (references only).')
  try:  # The inputs are checked before the slow bootstrap.
    summaries = summarise(
        run_data.load_with_references(FLAGS.runs, FLAGS.reference_agents,
                                      FLAGS.suite),
        num_iterations=FLAGS.num_iterations, num_games=FLAGS.num_games,
        reps=FLAGS.bootstrap_reps, confidence=FLAGS.confidence,
        seed=FLAGS.seed)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  markdown = to_markdown(summaries, FLAGS.confidence, FLAGS.num_iterations)
  print(markdown)
  if FLAGS.output_dir:
    for path in write_outputs(summaries, FLAGS.output_dir, markdown):
      print(f'wrote {path}', file=sys.stderr)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
