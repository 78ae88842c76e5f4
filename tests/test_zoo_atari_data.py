"""Tests for zoo.environments.atari_data."""

import csv
import math
import os

from ale_py import roms
import pytest

from zoo.environments import atari_data


def test_57_sorted_games_match_the_reference_csv():
  path = os.path.join(os.path.dirname(os.path.dirname(atari_data.__file__)),
                      'reference',
                      'atari_human_random.csv')
  with open(path, newline='') as f:
    names = [row['environment_name'] for row in csv.DictReader(f)]
  assert len(atari_data.GAMES) == 57
  assert list(atari_data.GAMES) == sorted(names)
  for name in ('montezuma_revenge', 'ms_pacman', 'pong', 'yars_revenge'):
    assert name in atari_data.GAMES


@pytest.mark.parametrize('game', atari_data.GAMES)
def test_every_game_resolves_to_an_ale_py_rom(game):
  path = roms.get_rom_path(atari_data.rom_id(game))
  assert path is not None and os.path.exists(path)


def test_check_game_returns_valid_name():
  assert atari_data.check_game('asterix') == 'asterix'


def test_check_game_lists_names_and_suggests_close_match():
  with pytest.raises(ValueError) as error:
    atari_data.check_game('montezumas_revenge')
  message = str(error.value)
  assert "Did you mean 'montezuma_revenge'" in message
  assert all(game in message for game in atari_data.GAMES)


def test_check_game_rejects_camel_case_gym_ids():
  with pytest.raises(ValueError, match='snake_case'):
    atari_data.check_game('MsPacman')


def test_human_normalized_score_is_zero_at_random_one_at_human():
  for game in ('asterix', 'double_dunk', 'skiing', 'video_pinball'):
    random_score, human_score = atari_data.random_and_human_score(game)
    assert atari_data.human_normalized_score(game, random_score) == 0.0
    assert math.isclose(atari_data.human_normalized_score(game, human_score),
                        1.0)


def test_human_normalized_score_values():
  # breakout: random 1.7, human 30.5.
  assert math.isclose(atari_data.human_normalized_score('breakout', 30.5 * 2
                                                        - 1.7), 2.0)
  assert math.isnan(atari_data.human_normalized_score('pong', math.nan))


def test_human_normalized_score_rejects_unknown_game():
  with pytest.raises(ValueError, match='Unknown Atari game'):
    atari_data.human_normalized_score('pacman', 1.0)
