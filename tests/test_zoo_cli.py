"""Tests for zoo.configuration.cli: how every tool starts, helps and fails."""

import logging
import os
import subprocess
import sys
import textwrap

import pytest

from zoo.configuration import cli

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

# A tool as the project writes one, started by cli.run or by absl's app.run.
TOOL = textwrap.dedent('''
    import sys
    from absl import app
    from absl import flags
    from zoo.configuration import cli

    flags.DEFINE_integer('count', 1, 'How many.')

    def main(argv):
      if flags.FLAGS.count < 0:
        raise app.UsageError('--count must be >= 0.')
      if flags.FLAGS.count == 7:
        import jax
        jax.devices()  # JAX probes for a TPU first.
      print('main ran')

    if __name__ == '__main__':
      (cli.run if sys.argv.pop(1) == 'cli' else app.run)(main)
''')


def _tool(tmp_path, how, *args):
  script = tmp_path / 'tool.py'
  script.write_text(TOOL)
  env = dict(os.environ, PYTHONPATH=REPO)
  env.pop('JAX_PLATFORMS', None)  # The TPU probe happens as on a user's machine.
  return subprocess.run([sys.executable, str(script), how, *args], cwd=REPO,
                        env=env, capture_output=True, text=True, timeout=120)


@pytest.mark.parametrize('flag', ['--help', '--helpshort', '--helpfull', '-?'])
def test_help_prints_absls_help_and_exits_zero(tmp_path, flag):
  result = _tool(tmp_path, 'cli', flag)
  absl = _tool(tmp_path, 'absl', flag)
  assert absl.returncode == 1  # What cli.run mends.
  assert result.returncode == 0, result.stderr
  assert result.stdout == absl.stdout
  assert '--count: How many.' in result.stdout
  assert 'main ran' not in result.stdout


def test_bad_flags_and_usage_errors_are_one_error_line(tmp_path):
  for args, line in (
      (['--count=x'], "Error: flag --count=x: invalid literal for int() with "
                      "base 10: 'x' (--help lists the flags)."),
      (['--cuont=2'], "Error: Unknown command line flag 'cuont'. Did you "
                      'mean: count ? (--help lists the flags).'),
      (['--count=-1'], 'Error: --count must be >= 0.'),
      (['--count=2', 'extra'], "Error: Unexpected arguments: ['extra']; give "
                               'flags only.')):
    result = _tool(tmp_path, 'cli', *args)
    assert (result.returncode, result.stdout) == (1, '')
    assert result.stderr.splitlines() == [line]
  assert _tool(tmp_path, 'cli', '--count=2').stdout == 'main ran\n'


def test_the_libtpu_note_is_dropped_when_a_tool_starts(tmp_path):
  without = _tool(tmp_path, 'absl', '--count=7')
  if 'libtpu' not in without.stderr:
    pytest.skip('JAX logs no absent-libtpu note here (a TPU, or no probe).')
  result = _tool(tmp_path, 'cli', '--count=7')
  assert result.returncode == 0 and 'main ran' in result.stdout
  assert 'libtpu' not in result.stderr


def test_importing_the_project_changes_no_logging():
  code = ('import logging, zoo, zoo.configuration.cli, zoo.loops.runner; '
          f'print(logging.getLogger({cli.JAX_BACKEND_LOGGER!r}).filters)')
  result = subprocess.run([sys.executable, '-c', code], cwd=REPO,
                          capture_output=True, text=True, timeout=120)
  assert result.stdout == '[]\n', result.stderr


def _record(level, message):
  return logging.LogRecord(cli.JAX_BACKEND_LOGGER, level, 'xla_bridge.py', 1,
                           message, None, None)


def test_the_filter_drops_only_the_absent_libtpu_note():
  note = ("Unable to initialize backend 'tpu': INTERNAL: Failed to open "
          'libtpu.so: libtpu.so: cannot open shared object file')
  other = "Unable to initialize backend 'tpu': INTERNAL: TPU is busy"
  keep = cli.NoLibtpuNote().filter
  assert not keep(_record(logging.INFO, note))
  assert keep(_record(logging.WARNING, note))
  assert keep(_record(logging.INFO, other))
  cli.install_log_filter()
  cli.install_log_filter()
  logger = logging.getLogger(cli.JAX_BACKEND_LOGGER)
  ours = [f for f in logger.filters if isinstance(f, cli.NoLibtpuNote)]
  assert len(ours) == 1
  logger.removeFilter(ours[0])


def test_a_tools_help_exits_zero():
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.aggregate', '--helpfull'],
      cwd=REPO, capture_output=True, text=True, timeout=120)
  assert result.returncode == 0, result.stderr
  assert '--runs' in result.stdout
