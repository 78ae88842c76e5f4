"""Tests for zoo.suites: a suite is found by its saved name."""

import pytest

from zoo import run_atari
from zoo import run_minatar
from zoo import settings
from zoo import suites


def test_suite_by_name_finds_the_suite_modules():
  assert suites.suite_by_name('atari') is run_atari.ATARI
  assert suites.suite_by_name('minatar') is run_minatar.MINATAR
  with pytest.raises(settings.ConfigError,
                     match=r"Unknown suite 'pong' \(no module zoo.run_pong\)"):
    suites.suite_by_name('pong')


def test_suite_defaults_name_only_settings():
  for suite in (run_atari.ATARI, run_minatar.MINATAR):
    assert set(suite.flag_defaults) <= set(settings.SETTINGS)
