"""Start a command-line tool: every entry point ends with `cli.run(main)`.

Unlike absl.app.run: --help exits with 0; a positional argument, a bad flag
or an `app.UsageError` ends with one `Error:` line and status 1; JAX's
absent-libtpu note is dropped.
"""

import logging
import sys
from typing import Callable, List, Optional

from absl import app
from absl import flags

JAX_BACKEND_LOGGER = 'jax._src.xla_bridge'


class NoLibtpuNote(logging.Filter):
  """Drop JAX's INFO note that libtpu is absent (only that note)."""

  def filter(self, record: logging.LogRecord) -> bool:
    message = record.getMessage()
    return not (record.levelno <= logging.INFO and
                message.startswith("Unable to initialize backend 'tpu'") and
                'Failed to open libtpu.so' in message)


def install_log_filter() -> None:
  """Drop JAX's absent-libtpu note from now on (idempotent)."""
  logger = logging.getLogger(JAX_BACKEND_LOGGER)
  if not any(isinstance(f, NoLibtpuNote) for f in logger.filters):
    logger.addFilter(NoLibtpuNote())


def one_line(message: str) -> str:
  """Return `message` on one line (absl's multi-line parse errors)."""
  return ' '.join(line.strip() for line in str(message).splitlines()
                  if line.strip())


def parse_flags(argv: List[str]) -> List[str]:
  """Parse the flags as absl does; its help flags exit with status 0."""
  try:
    return flags.FLAGS(argv)
  except flags.Error as e:
    sys.exit(f'Error: {one_line(e)} (--help lists the flags).')
  except SystemExit as e:
    if e.code in (None, 0, 1):
      raise SystemExit(0) from None
    raise


def _usage_error_as_one_line(main: Callable) -> Callable:
  def run_main(argv):
    try:
      if len(argv) > 1:  # Every tool takes flags only.
        raise app.UsageError(f'Unexpected arguments: {argv[1:]}; give flags '
                             'only.')
      return main(argv)
    except app.UsageError as e:
      message = one_line(e)
      if not message.startswith('Error:'):
        message = f'Error: {message}'
      print(message, file=sys.stderr, flush=True)
      sys.exit(e.exitcode or 1)
  return run_main


def run(main: Callable[[List[str]], Optional[int]],
        argv: Optional[List[str]] = None) -> None:
  """Run `main` as absl's app.run does (it exits), the project's way."""
  install_log_filter()
  app.run(_usage_error_as_one_line(main), argv=argv, flags_parser=parse_flags)
