"""The resume policy, and what both loops share around it.

A checkpoint resumes with equal settings (`Settings.checkpoint_config`),
except EXTENDABLE ones (docs/running.md). Also: the run directories held
while a run works, a checkpoint's meta, the interrupt and finished messages.
"""

import contextlib
import dataclasses
import os
from typing import (Any, Callable, Dict, Iterator, List, Mapping, NamedTuple,
                    Optional, Sequence)

import numpy as np

from zoo.configuration import settings as settings_lib
from zoo.loops import interrupts
from zoo.storage import checkpoint
from zoo.storage import results_csv
from zoo.storage import run_directory


# Settings a finished or interrupted run may change when resumed, provided
# the iterations already run would not have run differently.
EXTENDABLE = ('num_iterations', 'exploration_epsilon_decay_frame_fraction')


class Resume(NamedTuple):
  path: str                # The checkpoint directory to restore.
  meta: Dict[str, Any]     # Its meta.json: 'iteration' (next), 'rows', ...


def config_differences(saved: Mapping[str, Any], current: Mapping[str, Any],
                       ignore: Sequence[str] = ()) -> List[str]:
  """Return '--name=saved in the checkpoint, current now' per difference."""
  out = []
  for name in sorted(set(saved) | set(current)):
    if name not in ignore and saved.get(name) != current.get(name):
      out.append(f'--{name}={saved.get(name)!r} in the checkpoint, '
                 f'{current.get(name)!r} now')
  return out


def checkpoint_meta(s: settings_lib.Settings, iteration: int,
                    rows: List[Dict[str, Any]], **parts) -> Dict[str, Any]:
  """Return the meta of a run's checkpoint after `iteration` (both loops).

  It records the run's results CSV and checkpoint directory (absolute), which
  zoo.storage.run_directory checks; `parts`: the loop's own state by key.
  """
  return dict(parts, iteration=iteration + 1, config=s.checkpoint_config(),
              rows=rows, checkpoint_dir=os.path.abspath(s.checkpoint_dir),
              results_csv_path=(os.path.abspath(s.results_csv_path)
                                if s.results_csv_path else ''))


def interrupted(signum: int, iteration: int, frame: int,
                resume_iteration: Optional[int],
                partial: bool = False) -> interrupts.Interrupted:
  """Return the exception whose message says where the run stopped.

  `partial`: the stop came inside an iteration, whose work so far no
  checkpoint holds: the rerun does that iteration again.
  """
  if resume_iteration is not None:
    how = f'rerun the same command to resume from iteration {resume_iteration}'
    if partial:
      how += (f' (iteration {iteration}\'s partial work is not saved: the '
              'rerun does that iteration again from its start)')
  else:
    how = 'without --checkpoint_dir, a rerun starts over from iteration 0'
  return interrupts.Interrupted(
      signum, f'Interrupted ({interrupts.signal_name(signum)}) at iteration '
      f'{iteration}, frame {frame}; {how}.')


def finished(runs: Sequence[settings_lib.Settings],
             rows: Sequence[List[Dict[str, Any]]],
             say: Callable[[str], None]) -> List[List[Dict[str, Any]]]:
  """Say that the runs are complete and where; return their rows.

  A deleted results CSV is written again from the checkpoint's rows.
  """
  out = []
  for s, seed_rows in zip(runs, rows):
    out.append(seed_rows[:s.num_iterations + 1])
    where = s.results_csv_path
    if where and not os.path.exists(where):
      results_csv.write_rows(where, out[-1])
    say(f'Run complete: iterations 0..{s.num_iterations} are in '
        f'{where or "the checkpoint (no --results_csv_path)"} (checkpoint '
        f'{checkpoint.latest(s.checkpoint_dir)}); nothing to do. '
        + how_to_extend(s))
  return out


def how_to_extend(s: settings_lib.Settings) -> str:
  """Return how to train a finished run longer: flags that check_resume takes.

  ε decays over a fraction of all training frames: where the decay began
  within the frames run, a longer run keeps it only with a smaller fraction.
  """
  longer = dataclasses.replace(s, num_iterations=2 * s.num_iterations)
  frames_run = s.num_iterations * s.num_train_frames
  if (longer.epsilon_decay_frames() == s.epsilon_decay_frames() or
      frames_run <= s.epsilon_begin_frame()):
    return ('To train longer, raise --num_iterations (e.g. '
            f'--num_iterations={longer.num_iterations}).')
  decay = s.epsilon_decay_frames()
  fraction = _fraction_keeping(decay, longer)
  return (
      'To train longer, raise --num_iterations and keep the ε schedule of '
      f'the frames run (ε decays over {decay} frames) with '
      '--exploration_epsilon_decay_frame_fraction = '
      f'{decay} / (num_iterations x {s.num_train_frames}), e.g. '
      f'--num_iterations={longer.num_iterations} '
      f'--exploration_epsilon_decay_frame_fraction={fraction!r}.')


@contextlib.contextmanager
def held(runs: Sequence[settings_lib.Settings]) -> Iterator[None]:
  """Hold the runs' directories while they run; ConfigError if one is held."""
  directories = [run_directory.directory_of(
      s.results_csv_path, s.checkpoint_dir, s.tensorboard_dir) for s in runs]
  try:
    with run_directory.held([d for d in directories if d]):
      yield
  except run_directory.Refused as e:
    raise settings_lib.ConfigError(str(e)) from e


def _fraction_keeping(decay_frames: int, s: settings_lib.Settings) -> float:
  """Return the decay fraction giving `decay_frames` with s's other values."""
  frames = s.num_iterations * s.num_train_frames
  fraction = decay_frames / frames
  while int(fraction * frames) < decay_frames:  # Float rounding.
    fraction = float(np.nextafter(fraction, 1.0))
  return fraction


def check_resume(s: settings_lib.Settings) -> Optional[Resume]:
  """Return the checkpoint to resume (None: none) after checking it.

  A longer run (--num_iterations) may continue a finished one when nothing
  already run would change: the ε decay must stay as long (or not have begun).
  The checkpoint is zoo.storage.run_directory.resume_point's.

  Raises:
    ConfigError: naming the differing settings, or why an extension would
      change what already ran and the flag value that keeps it; or why the
      run directory refuses.
  """
  try:  # The newest intact checkpoint, its run's own; no finished row lost.
    path, meta = run_directory.resume_point(s.checkpoint_dir,
                                            s.results_csv_path)
  except run_directory.Refused as e:
    raise settings_lib.ConfigError(str(e)) from e
  if path is None:
    return None
  saved = meta['config']
  config = s.checkpoint_config()
  differences = config_differences(saved, config, EXTENDABLE)
  if differences:
    raise settings_lib.ConfigError(
        f'The checkpoint {path} was written by another agent or '
        'configuration: ' + '; '.join(differences) + '. Rerun with the same '
        'flags to resume, or use a new --checkpoint_dir.')
  if all(saved.get(name) == config.get(name) for name in EXTENDABLE):
    return Resume(path, meta)
  done = meta['iteration'] - 1  # The last iteration run.
  if s.num_iterations < done:
    raise settings_lib.ConfigError(
        f'The checkpoint {path} holds iterations 0..{done}; '
        f'--num_iterations={s.num_iterations} is fewer. Pass '
        f'--num_iterations={saved["num_iterations"]} (or more, to extend).')
  frames_run = done * s.num_train_frames
  old_decay = settings_lib.Settings.from_dict(saved).epsilon_decay_frames()
  if (s.epsilon_decay_frames() != old_decay and
      frames_run > s.epsilon_begin_frame()):
    fraction = _fraction_keeping(old_decay, s)
    changes = ' and '.join(
        f'--{name} from {saved.get(name)} to {getattr(s, name)}'
        for name in EXTENDABLE if saved.get(name) != getattr(s, name))
    raise settings_lib.ConfigError(
        f'Changing {changes} would change the ε schedule of the '
        f'{frames_run} frames already run: ε decays over '
        'exploration_epsilon_decay_frame_fraction x num_iterations x '
        f'num_train_frames = {old_decay} frames in the checkpoint, '
        f'{s.epsilon_decay_frames()} now. To extend the run with the same '
        f'schedule, add --exploration_epsilon_decay_frame_fraction={fraction!r}'
        f' (same {old_decay} frames).')
  return Resume(path, meta)
