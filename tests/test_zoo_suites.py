"""Tests for zoo.configuration.suites: a suite is found by its saved name."""

import pytest

from zoo.suites import atari_suite
from zoo.suites import minatar_suite
from zoo.configuration import settings
from zoo.configuration import suites


def test_suite_by_name_finds_the_suite_modules():
  assert suites.suite_by_name('atari') is atari_suite.ATARI
  assert suites.suite_by_name('minatar') is minatar_suite.MINATAR
  with pytest.raises(settings.ConfigError,
                     match=r"Unknown suite 'pong' \(no module zoo.suites.pong_suite\)"):
    suites.suite_by_name('pong')


def test_suite_defaults_name_only_settings():
  for suite in (atari_suite.ATARI, minatar_suite.MINATAR):
    assert set(suite.flag_defaults) <= set(settings.SETTINGS)
