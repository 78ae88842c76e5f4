r"""Compare jitted-loop MinAtar runs with the Python loop's, per game and agent.

  python -m scripts.analysis.compare_jitted_minatar --root_dir=runs/minatar_jitted
      [--reference_runs=docs/minatar/runs.csv] [--configs=CR-DQN,QR-DQN-1]
      [--games=asterix,breakout] [--num_iterations=5] [--against=CR-DQN,QR-DQN-1]

The reference is the Python loop's per-seed final evaluation returns in the
study report's runs.csv (scripts.analysis.minatar_report); the jitted runs are read
from ROOT/<label>/<agent>/<game>/seed_<s>/results.csv (as the campaign
minatar_study_jitted writes them under its root's minatar_jitted/). Prints, per
game and configuration, both means over complete seeds with 95% bootstrap
CIs and the difference jitted - python with its CI (each side's seeds
resampled). With --against, each jitted configuration is compared with the
named configurations of the reference instead of its own (a new preset,
e.g. CR-DQN-MQ, against CR-DQN and QR-DQN-1).
"""

import csv
import glob
import os
import sys
from typing import Dict, List, Optional, Sequence, Tuple

from absl import app
from absl import flags
from zoo.configuration import cli

from scripts.analysis import minatar_report

FLAGS = flags.FLAGS


# The columns of the study report's runs.csv that the comparison reads.
REFERENCE_COLUMNS = ('configuration', 'game', 'state', 'final_eval_return')


def reference_finals(path: str) -> Dict[Tuple[str, str], List[float]]:
  """Return {(configuration, game): final returns of complete seeds}.

  Raises:
    ValueError: the file is not the report's runs.csv, or is cut short.
  """
  out: Dict[Tuple[str, str], List[float]] = {}
  fix = ('Pass the runs.csv that python -m scripts.campaign '
         '--campaign=minatar_study --report=DIR writes '
         '(docs/minatar/runs.csv).')
  try:
    with open(path, newline='') as f:
      reader = csv.DictReader(f)
      missing = [c for c in REFERENCE_COLUMNS
                 if c not in (reader.fieldnames or [])]
      if missing:
        raise ValueError(f'--reference_runs={path}: missing column(s) '
                         f'{missing}. {fix}')
      for row in reader:
        if row['state'] != 'complete':
          continue
        try:
          value = float(row['final_eval_return'])
        except (TypeError, ValueError):
          raise ValueError(
              f'--reference_runs={path}, line {reader.line_num}: final '
              f'return {row["final_eval_return"]!r} is not a number (the '
              f'file is cut short or damaged). {fix}') from None
        out.setdefault((row['configuration'], row['game']), []).append(value)
  except (OSError, UnicodeDecodeError, csv.Error) as e:
    raise ValueError(f'--reference_runs={path}: cannot be read ({e}). '
                     f'{fix}') from e
  return out


def jitted_csv_paths(root_dir: str, label: str, game: str) -> List[str]:
  """Return the results CSVs of one cell's jitted runs."""
  pattern = os.path.join(root_dir, label, '*', game, 'seed_*', 'results.csv')
  return sorted(glob.glob(pattern))


def jitted_finals(root_dir: str, label: str, game: str, num_iterations: int
                  ) -> List[float]:
  """Return the final returns of the complete jitted runs of one cell."""
  finals = []
  for path in jitted_csv_paths(root_dir, label, game):
    run = minatar_report.load_run(label, game, 0, path, num_iterations, 1)
    if run is not None and run.complete:
      finals.append(float(run.eval_return[-1]))
  return finals


def comparison_lines(reference, root_dir: str, configs, games,
                     num_iterations: int, reps: int,
                     against: Optional[Sequence[str]] = None) -> List[str]:
  """Return the table's lines; `against`: reference configurations to
  compare each jitted one with (None: its own)."""
  lines = ['| game | configuration | python loop | jitted loop | '
           'jitted - python |', '|---|---|---|---|---|']
  for game in games:
    for label in configs:
      new = jitted_finals(root_dir, label, game, num_iterations)
      for ref_label in against or (label,):
        ref = reference.get((ref_label, game), [])
        name = label if ref_label == label else f'{label} vs {ref_label}'
        lines.append(f'| {game} | {name} | '
                     + minatar_report.comparison_cells(new, ref, reps))
  return lines


def define_flags() -> None:
  """Define this entry point's flags (only when run, to avoid flag clashes)."""
  flags.DEFINE_string('root_dir', None, 'Where the jitted runs live.',
                      required=True)
  flags.DEFINE_string('reference_runs', 'docs/minatar/runs.csv',
                      "The Python loop's runs (scripts.analysis.minatar_report).")
  flags.DEFINE_list('configs', ['CR-DQN', 'QR-DQN-1'], 'Configurations.')
  flags.DEFINE_list('games', ['asterix', 'breakout'], 'Games.')
  flags.DEFINE_integer('num_iterations', 5, 'Iterations of a complete run.')
  flags.DEFINE_integer('bootstrap_reps', 50_000, 'Bootstrap resamples.')
  flags.DEFINE_list('against', [], 'Compare each configuration with these '
                    'configurations of the reference (default: its own).')


def main(argv):
  if len(argv) > 1:
    raise app.UsageError(f'Unexpected arguments: {argv[1:]}')
  if not os.path.exists(FLAGS.reference_runs):
    sys.exit(f'Error: --reference_runs={FLAGS.reference_runs}: no such '
             "file; pass the study report's runs.csv (docs/minatar/runs.csv, "
             'written by python -m scripts.campaign --report).')
  found = [path for label in FLAGS.configs for game in FLAGS.games
           for path in jitted_csv_paths(FLAGS.root_dir, label, game)]
  if not found:
    sys.exit(f'Error: --root_dir={FLAGS.root_dir}: no jitted run of '
             f'{", ".join(FLAGS.configs)} on {", ".join(FLAGS.games)} there '
             '(ROOT/<configuration>/<agent>/<game>/seed_<s>/results.csv). '
             'Pass the --root_dir of python -m scripts.campaign '
             '--campaign=minatar_study_jitted, then minatar_jitted.')
  try:
    reference = reference_finals(FLAGS.reference_runs)
    missing = [c for c in FLAGS.against
               if not any(label == c for label, _ in reference)]
    if missing:
      raise ValueError(f'--against: {", ".join(missing)} not in '
                       f'{FLAGS.reference_runs}; it holds '
                       f'{", ".join(sorted({l for l, _ in reference}))}.')
    lines = comparison_lines(reference, FLAGS.root_dir, FLAGS.configs,
                             FLAGS.games, FLAGS.num_iterations,
                             FLAGS.bootstrap_reps, FLAGS.against or None)
  except ValueError as e:
    sys.exit(f'Error: {e}')
  print('Final evaluation return, mean over complete seeds [95% bootstrap '
        'CI] (seeds):')
  print('\n'.join(lines))


if __name__ == '__main__':
  define_flags()
  cli.run(main)
