"""The MinAtar report of a campaign's runs (scripts.analysis.minatar_report).

Every MinAtar run's seeds are planned runs, labelled by their configuration
(a campaign's Atari runs are left to scripts.analysis); a CR-DQN-K8 block is the K-stream check, compared with CR-DQN's K = 1 runs on
its game. The report reads the runs as far as they go: incomplete and
missing ones are listed, never averaged in.
"""

import os
from typing import List, Sequence

from scripts.analysis import minatar_report
from scripts.campaign import run_record as run_lib

K_STREAM_LABEL = 'CR-DQN-K8'
RANDOM_SEEDS = (1, 2, 3)  # The random policy's seeds.


def write(runs: Sequence[run_lib.Run], root: str, output_dir: str, *,
          reps: int = 50_000, random_steps: int = 25_000,
          machine: str = '') -> List[str]:
  """Write the report of the runs into output_dir; return the files.

  Raises ValueError naming the fix: no MinAtar run, runs of several
  lengths, or none with a results.csv under root.
  """
  runs = [r for r in runs if r.suite == 'minatar']
  if not runs:
    raise ValueError('--report reads MinAtar runs, and this campaign has '
                     'none (e.g. --campaign=minatar_study).')
  lengths = {(r.num_iterations(), int(r.setting('num_train_frames')),
              int(r.setting('num_eval_frames'))) for r in runs}
  if len(lengths) > 1:
    raise ValueError(f'--report: the runs differ in length {sorted(lengths)}; '
                     'report one length at a time (a campaign file).')
  (iterations, train_frames, eval_frames), = lengths
  planned = [(r.label, r.game, s, os.path.join(r.seed_dir(root, s),
                                                run_lib.RESULTS_FILE))
             for r in runs for s in r.seeds]
  if not any(os.path.exists(p) for *_, p in planned):
    raise ValueError(f'--report: none of the {len(planned)} planned runs has '
                     f'a results.csv under {root} (the first would be '
                     f'{planned[0][3]}). Pass the --root_dir the campaign '
                     'ran in.')
  results = {(label, game, s): minatar_report.load_run(
      label, game, s, path, iterations, eval_frames)
             for label, game, s, path in planned}  # Read before the slow part.
  labels = list(dict.fromkeys(r.label for r in runs
                              if r.label != K_STREAM_LABEL))
  games = list(dict.fromkeys(r.game for r in runs
                             if r.label != K_STREAM_LABEL))
  k_games = [r.game for r in runs if r.label == K_STREAM_LABEL]
  k_stream = (K_STREAM_LABEL, k_games[0]) if k_games else None
  # pylint: disable=g-import-not-at-top
  from scripts.experiments import minatar_random  # Runs MinAtar.
  randoms = [minatar_random.measure(g, RANDOM_SEEDS, random_steps)
             for g in dict.fromkeys(games + k_games)]
  return minatar_report.write_report(
      planned, results, labels, games, k_stream, output_dir,
      num_iterations=iterations, num_train_frames=train_frames,
      machine=machine or minatar_report.cpu_description(),
      random_results=randoms, reps=reps)
