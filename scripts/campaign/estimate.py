"""How long a campaign takes, from measured frame rates.

A run's time is its training frames over a training rate plus its
evaluation frames over an evaluation rate. The rates are the campaign's own
where its runs have written iterations (the median of their CSVs'
train_frame_rate and eval_frame_rate, per kind of run), else the project's
measurements below, else --train_fps / --eval_fps. A run that evaluates
whole episodes plays as many evaluation frames as the campaign's complete
runs of its game did (their median; eval_num_frames), or, on a game none has
finished yet, the median over the games that have.
"""

import statistics
from typing import Dict, NamedTuple, Optional, Sequence, Tuple

from scripts.analysis import run_data
from scripts.campaign import run_record as run_lib


class Rate(NamedTuple):
  train: float   # Frames per second (MinAtar: steps), per seed.
  eval: float
  source: str


# The project's measurements (docs/performance.md, docs/campaign.md).
# Evaluation where not measured: at the training rate, an upper bound on
# its time (evaluation makes no updates).
MEASURED = {
    'atari': Rate(389, 389, 'reference mode, 2-core AMD EPYC CPU'),
    'atari-vector': Rate(7_600, 15_000,
                         '--num_envs=64, NVIDIA H200 with 16 cores'),
    'minatar': Rate(645, 3_125, 'bench_minatar, 2-core AMD EPYC CPU'),
    'minatar-jitted': Rate(250, 250, 'jitted loop, per seed, 2-core AMD '
                           'EPYC CPU'),
}
# --protocol=atari100k, per preset (bench_atari100k, Pong).
MEASURED.update({
    f'atari100k:{preset}': Rate(train, evaluation,
                                'bench_atari100k, 2-core AMD EPYC CPU')
    for preset, train, evaluation in (('QR-DQN-1', 171, 3_836),
                                      ('CR-DQN', 299, 3_990),
                                      ('IQN', 90, 2_905),
                                      ('CR-IQN', 92, 2_766))})


def kind(run: run_lib.Run) -> str:
  """The kind of run a rate is measured for."""
  if run.suite == 'minatar':
    return 'minatar-jitted' if run.jitted else 'minatar'
  if run.setting('protocol') == 'atari100k':
    preset = f'atari100k:{run.flag("preset")}'
    if preset in MEASURED:
      return preset
  return 'atari-vector' if int(run.setting('num_envs')) > 1 else 'atari'


def measured(runs: Sequence[run_lib.Run], root: str) -> Dict[str, Rate]:
  """Return the median rates of the campaign's own CSVs, per kind."""
  seen: Dict[str, Tuple[list, list]] = {}
  for run in runs:
    for path in run.csv_paths(root):
      try:
        rows = run_data.read_rows(path, ())
      except (OSError, ValueError):
        continue
      train, evaluation = seen.setdefault(kind(run), ([], []))
      for row in rows:
        for values, column in ((train, 'train_frame_rate'),
                               (evaluation, 'eval_frame_rate')):
          try:
            value = float(row.get(column) or 'nan')
          except ValueError:
            continue
          if value > 0:
            values.append(value)
  return {k: Rate(statistics.median(t), statistics.median(e),
                  f'this campaign, {len(t)} iterations')
          for k, (t, e) in seen.items() if t and e}


def evaluation_frames(runs: Sequence[run_lib.Run],
                      root: str) -> Dict[str, float]:
  """Return the median evaluation frames of a complete run, per game, over
  the campaign's complete runs that evaluate whole episodes."""
  seen: Dict[str, list] = {}
  for run in runs:
    if frames(run)[1] is not None or not run.done(root):
      continue
    for path in run.csv_paths(root):
      try:
        rows = run_data.read_rows(path, ('eval_num_frames',))
        total = sum(float(row['eval_num_frames']) for row in rows)
      except (OSError, ValueError):
        continue
      seen.setdefault(run.game, []).append(total)
  return {game: statistics.median(v) for game, v in seen.items()}


def frames(run: run_lib.Run) -> Tuple[int, Optional[int]]:
  """Return (training, evaluation) frames per seed; evaluation None when it
  plays whole episodes, whose length is not known before."""
  iterations = run.num_iterations()
  train = iterations * int(run.setting('num_train_frames'))
  if (int(run.setting('num_eval_episodes')) or
      int(run.setting('num_final_eval_episodes'))):
    return train, None
  return train, (iterations + 1) * int(run.setting('num_eval_frames'))


def seconds(run: run_lib.Run, rate: Rate) -> Tuple[float, Optional[float]]:
  """Return a run's (training, evaluation) seconds from its start."""
  train, evaluation = frames(run)
  return (train / rate.train,
          None if evaluation is None else evaluation / rate.eval)


def summary(runs: Sequence[run_lib.Run], todo: Sequence[run_lib.Run],
            root: str, parallel: int, train_fps: Optional[float] = None,
            eval_fps: Optional[float] = None) -> str:
  """Return the dry run's estimate of the runs to launch, in lines."""
  rates = dict(MEASURED, **measured(runs, root))
  if train_fps or eval_fps:
    rates = {k: Rate(train_fps or r.train, eval_fps or r.eval,
                     '--train_fps/--eval_fps') for k, r in rates.items()}
  per_game = evaluation_frames(runs, root)
  typical = statistics.median(per_game.values()) if per_game else None
  train = evaluation = 0.0
  unknown = elsewhere = 0
  for run in todo:
    t, e = seconds(run, rates[kind(run)])
    train += t
    if e is None and typical is not None:
      elsewhere += run.game not in per_game
      e = per_game.get(run.game, typical) * len(run.seeds) / rates[
          kind(run)].eval
    if e is None:
      unknown += 1
    else:
      evaluation += e
  waves = max(1, min(parallel, len(todo)))
  lines = [f'Estimate for the {len(todo)} runs to launch, {parallel} at a '
           f'time: {(train + evaluation) / waves / 3600:,.1f} h '
           f'({train / 3600:,.1f} h of training and '
           f'{evaluation / 3600:,.1f} h of evaluation in all).']
  if per_game:
    lines.append(
        f'Evaluation of whole episodes: the frames of the campaign\'s '
        f'complete runs on {len(per_game)} game(s) (median per game); '
        f'{elsewhere} run(s) on other games at their median, '
        f'{typical:,.0f} frames a run.')
  if unknown:
    lines.append(f'{unknown} run(s) evaluate whole episodes: their '
                 'evaluation is not in the estimate until the campaign has '
                 'measured it (its CSVs).')
  for k in sorted({kind(r) for r in todo}):
    lines.append(f'  {k}: {rates[k].train:,.0f} training and '
                 f'{rates[k].eval:,.0f} evaluation frames/s per seed '
                 f'({rates[k].source}).')
  return '\n'.join(lines)

