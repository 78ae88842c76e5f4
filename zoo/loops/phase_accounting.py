"""One phase's accounting of K streams, numpy or jax.numpy (`xp`), both loops.

Each timestep a stream spends in a counted episode counts
`num_action_repeats` frames; the budget rule, whole episodes within a bound
at K > 1 and the phase's return: docs/evaluation-rule.md and
docs/training-streams.md.
"""

import math
from typing import Any, Callable, NamedTuple, Optional, Tuple

import chex
import numpy as np

from zoo.environments import environment

# Whole episodes may step at most this multiple of the budget past it
# (all K streams' frames, counted or not): an evaluation costs at most
# (1 + OVERRUN) times its budget, plus one step (docs/evaluation-rule.md).
OVERRUN = 1.0
# What the episodes still running at the bound count as: 'partial' (their
# return so far) or 'drop' (nothing); the replay measured 'partial' to
# bias less (docs/evaluation-rule.md).
CUT_RULES = ('partial', 'drop')
CUT_RULE = 'partial'


def is_dqn_zoo(num_streams: int) -> bool:
  """Return whether K streams run DQN Zoo's protocol exactly: K = 1.

  The one place the K = 1 / K > 1 rule is decided (fresh training streams,
  the budget rule in evaluation, a partial return when no episode ended).
  """
  return num_streams == 1


class PhaseStats(NamedTuple):
  """One phase's CSV numbers (both loops)."""
  episode_return: float  # The phase's return (phase_stats' rule).
  num_episodes: int      # Counted episodes that ended (or were cut).
  num_frames: int        # Frames counted in the phase (all streams).
  frame_rate: float      # num_frames / duration.
  duration: float        # Seconds.
  num_cut: int = 0       # Of num_episodes, those cut at the bound.


class Tally(NamedTuple):
  """A phase's totals so far (numpy or jax arrays)."""
  running: Any       # [K] float: return of each stream's current episode.
  counted: Any       # [K] bool: the current episode counts (still running).
  frames: Any        # int scalar: frames counted.
  return_sum: Any    # float scalar: of the counted episodes ended or cut.
  num_episodes: Any  # int scalar: counted episodes ended or cut.
  stepped: Any       # int scalar: frames stepped, all K streams.
  num_cut: Any       # int scalar: counted episodes cut at the bound.


def start(running, xp=np) -> Tally:
  """Return a phase's zero totals; `running`: the streams' returns so far."""
  zero = xp.zeros((), int)
  return Tally(running, xp.ones(running.shape, bool), zero,
               xp.zeros((), running.dtype), zero, zero, zero)


def bound(num_frames: int, overrun: float = OVERRUN) -> float:
  """Return the most frames whole episodes step past a budget (inf: none)."""
  return math.inf if math.isinf(overrun) else math.ceil(overrun * num_frames)


def count(tally: Tally, step_type, reward, num_frames: int,
          num_action_repeats: int, xp=np, *, overrun: float = OVERRUN,
          cut_rule: str = CUT_RULE, num_episodes: int = 0) -> Tally:
  """Count one timestep ([K] step types and raw rewards) of a phase.

  Once whole episodes have stepped `bound(num_frames, overrun)` frames past
  the budget, the counted ones still running are cut (`cut_rule`).
  num_episodes > 0: count exactly that many whole episodes instead, the
  first ones to start (streams in order), none cut; no frame budget.
  """
  chex.assert_equal_shape([step_type, reward, tally.running, tally.counted])
  if cut_rule not in CUT_RULES:
    raise ValueError(f'cut_rule must be one of {CUT_RULES}, got {cut_rule!r}.')
  first = step_type == environment.FIRST
  last = step_type == environment.LAST
  if num_episodes:
    started = tally.num_episodes + xp.sum(tally.counted & ~first)
    rank = xp.cumsum(first.astype(int))
    counted = xp.where(first, started + rank <= num_episodes, tally.counted)
  else:
    counted = xp.where(first, tally.frames < num_frames, tally.counted)
  running = xp.where(first, 0.0, tally.running + reward).astype(
      tally.running.dtype)
  ended = last & counted
  stepped = tally.stepped + num_action_repeats * running.shape[0]
  limit = math.inf if num_episodes else bound(num_frames, overrun)
  if math.isinf(limit):
    cut = xp.zeros_like(counted)
  else:
    # Only a phase that went on past its spent budget (whole episodes) can
    # reach the bound: the budget rule ends on the step that spends it.
    cut = counted & ~last & (tally.frames >= num_frames) & (
        stepped >= num_frames + limit)
  closed = ended | cut if cut_rule == 'partial' else ended
  int_type = tally.num_episodes.dtype
  return Tally(
      running, counted & ~last & ~cut,
      tally.frames + num_action_repeats * xp.sum(counted,
                                                 dtype=tally.frames.dtype),
      tally.return_sum + xp.sum(xp.where(closed, running, 0.0),
                                dtype=running.dtype),
      tally.num_episodes + xp.sum(closed, dtype=int_type),
      stepped.astype(tally.stepped.dtype),
      tally.num_cut + xp.sum(cut & closed, dtype=int_type))


def is_over(tally: Tally, num_frames: int, whole_episodes: bool, xp=np,
            num_episodes: int = 0):
  """Return whether the phase ends after the timestep counted last.

  num_episodes > 0: once that many counted episodes have ended.
  """
  if num_episodes:
    return (tally.num_episodes >= num_episodes) & ~xp.any(tally.counted)
  spent = tally.frames >= num_frames
  return spent & ~xp.any(tally.counted) if whole_episodes else spent


def past_budget(tally: Tally, num_frames: int,
                overrun: float = OVERRUN) -> str:
  """Return what a whole-episode phase is doing past its budget ('' before).

  E.g. '500k-frame budget spent, finishing 12 episodes in progress, 340k
  frames past it (at most 1.0M)'. Host values only.
  """
  if int(tally.frames) < num_frames:
    return ''
  running = int(np.sum(tally.counted))
  past = max(int(tally.stepped) - num_frames, 0)
  limit = bound(num_frames, overrun)
  most = '' if math.isinf(limit) else f' (at most {_short(limit)})'
  noun = 'episode' if running == 1 else 'episodes'
  return (f'{_short(num_frames)}-frame budget spent, finishing {running} '
          f'{noun} in progress, '
          f'{_short(past)} frames past it{most}')


def _short(frames: float) -> str:
  """Return 340k, 1.2M, or the number itself below 10,000."""
  if frames >= 1e6:
    return f'{frames / 1e6:.1f}M'
  if frames >= 1e4:
    return f'{frames / 1e3:.0f}k'
  return f'{int(frames)}'


def phase_stats(tally: Tally, duration: float) -> PhaseStats:
  """Return the PhaseStats of one phase's (host) totals."""
  num_episodes = int(tally.num_episodes)
  running = np.asarray(tally.running, np.float64)
  if num_episodes:
    episode_return = float(tally.return_sum) / num_episodes
  elif is_dqn_zoo(running.size):  # The cut episode's partial return.
    episode_return = float(running[0])
  else:
    episode_return = math.nan
  frames = int(tally.frames)
  return PhaseStats(episode_return, num_episodes, frames,
                    frames / duration if duration else math.nan, duration,
                    int(tally.num_cut))


def run_steps(timestep: environment.BatchedTimeStep,
              step: Callable[[np.ndarray], environment.BatchedTimeStep],
              act: Callable[[environment.BatchedTimeStep], np.ndarray],
              tally: Tally, num_frames: int, num_action_repeats: int,
              whole_episodes: bool,
              on_step: Optional[Callable[[int], None]] = None, *,
              on_tally: Optional[Callable[[Tally], None]] = None,
              num_episodes: int = 0) -> Tuple[np.ndarray, Tally]:
  """Act and count until the phase is over; return (last actions, tally).

  `on_step` gets the frames counted after every step, `on_tally` the tally;
  num_episodes > 0: exactly that many whole episodes (`count`).
  """
  while True:
    actions = act(timestep)
    tally = count(tally, timestep.step_type, timestep.reward, num_frames,
                  num_action_repeats, num_episodes=num_episodes)
    if on_step is not None:
      on_step(int(tally.frames))
    if on_tally is not None:
      on_tally(tally)
    if is_over(tally, num_frames, whole_episodes, num_episodes=num_episodes):
      return actions, tally
    timestep = step(actions)
