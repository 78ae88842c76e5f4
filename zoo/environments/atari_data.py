"""The 57 Atari games of DQN Zoo, their ROMs and human-normalised scores."""

import csv
import difflib
import functools
import math
import os
from typing import Mapping, Tuple

_REFERENCE_CSV = os.path.join(
    os.path.dirname(os.path.dirname(__file__)), 'reference',
    'atari_human_random.csv')


@functools.lru_cache(maxsize=None)
def _random_and_human_scores() -> Mapping[str, Tuple[float, float]]:
  with open(_REFERENCE_CSV, newline='') as f:
    rows = list(csv.DictReader(f))
  return {r['environment_name']: (float(r['random']), float(r['human']))
          for r in rows}


# DQN Zoo's snake_case names (dqn_zoo/atari_data.py ATARI_GAMES), sorted.
GAMES: Tuple[str, ...] = tuple(sorted(_random_and_human_scores()))

def check_game(name: str) -> str:
  """Return `name` if it is one of the 57 games, else raise a ValueError."""
  if name in GAMES:
    return name
  close = difflib.get_close_matches(str(name), GAMES, n=3, cutoff=0.6)
  hint = (f' Did you mean {" or ".join(repr(c) for c in close)}?' if close
          else '')
  raise ValueError(
      f'Unknown Atari game {name!r}.{hint} Use one of DQN Zoo\'s 57 snake_case '
      f'names: {", ".join(GAMES)}.')


def rom_id(game: str) -> str:
  """Return the ale-py ROM id of a game (checked)."""
  # DQN Zoo's names are ale-py 0.12's ROM ids (tests resolve all 57).
  return check_game(game)


def random_and_human_score(game: str) -> Tuple[float, float]:
  """Return the (random, human) reference scores of a game (checked)."""
  return _random_and_human_scores()[check_game(game)]


def human_normalized_score(game: str, score: float) -> float:
  """Return (score - random) / (human - random); NaN stays NaN."""
  random_score, human_score = random_and_human_score(game)
  if math.isnan(score):
    return math.nan
  return (score - random_score) / (human_score - random_score)
