"""Suite-wide setup: one JAX compilation cache per run, cheap compiles.

Most of the suite's CPU time is XLA compiling the same small programs again:
in every xdist worker and in every entry-point process a test starts. A
persistent compilation cache shared by all of them, made empty when the run
starts and removed when it ends, compiles each program once per run. It is
set in the environment before anything imports JAX, so the workers and the
processes the tests start inherit it; a compiled program is the same program,
so no result changes. The size limit turns on JAX's file lock around every
cache read and write, so that processes never read a half-written entry.
"""

import os
import resource
import shutil
import tempfile

import pytest

from tests import compile_flags

_CACHE_ENV = 'JAX_COMPILATION_CACHE_DIR'
_made_here = None
if _CACHE_ENV not in os.environ:
  _made_here = tempfile.mkdtemp(prefix='zoo-tests-jax-cache-')
  os.environ.update({
      _CACHE_ENV: _made_here,
      'JAX_PERSISTENT_CACHE_MIN_COMPILE_TIME_SECS': '0',
      'JAX_PERSISTENT_CACHE_MIN_ENTRY_SIZE_BYTES': '0',
      'JAX_COMPILATION_CACHE_MAX_SIZE': str(4 * 2**30),
  })


# Each xdist worker on a CPU of its own (Linux), before it starts JAX: XLA
# sizes its thread pool by the process's CPUs, so unpinned workers each run a
# pool as wide as the machine and contend for every core; pinned, no test's
# last bits depend on how many cores the machine has. The processes a test
# starts inherit their worker's CPU.
if 'PYTEST_XDIST_WORKER' in os.environ and hasattr(os, 'sched_setaffinity'):
  _cpus = sorted(os.sched_getaffinity(0))
  _worker = int(os.environ['PYTEST_XDIST_WORKER'].lstrip('gw'))
  os.sched_setaffinity(0, {_cpus[_worker % len(_cpus)]})

# Every process of the suite compiles for one instruction set, cheaply
# (tests/compile_flags.py); the runs compared with recorded numbers start in
# compile_flags.reference_environment().
os.environ.update(compile_flags.suite_environment())


def pytest_collection_modifyitems(items):
  """Run the end-to-end tests first (stable otherwise).

  xdist's workers steal queued tests from the tail of a busy worker's queue:
  with the long tests at the head, the run ends on short ones, and no core
  waits for a long test started last.
  """
  items.sort(key=lambda item: item.get_closest_marker('end_to_end') is None)


def pytest_unconfigure(config):
  del config
  if _made_here is not None and 'PYTEST_XDIST_WORKER' not in os.environ:
    shutil.rmtree(_made_here, ignore_errors=True)


# The suite's budget, reported rather than asserted: every test over
# LONG_SECONDS must be marked `long` with its reason, and the summary names
# the ones that are not. Beside each test's wall time, its CPU time (this
# process and the processes it started and waited for), which a busy machine
# does not inflate: the figure to shrink.
LONG_SECONDS = 60.0
_seconds = {}
_cpu_seconds = {}
_long_reasons = {}


def _cpu_now():
  own = resource.getrusage(resource.RUSAGE_SELF)
  children = resource.getrusage(resource.RUSAGE_CHILDREN)
  return own.ru_utime + own.ru_stime + children.ru_utime + children.ru_stime


def pytest_runtest_setup(item):
  item.stash[_CPU_START] = _cpu_now()
  marker = item.get_closest_marker('long')
  if marker is not None:
    item.user_properties.append(('long_reason', marker.kwargs.get('reason', '')))


_CPU_START = pytest.StashKey[float]()


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
  if call.when == 'teardown' and _CPU_START in item.stash:
    item.user_properties.append(
        ('cpu_seconds', _cpu_now() - item.stash[_CPU_START]))
  yield


def pytest_runtest_logreport(report):
  _seconds[report.nodeid] = _seconds.get(report.nodeid, 0.0) + report.duration
  for key, value in report.user_properties:
    if key == 'long_reason':
      _long_reasons[report.nodeid] = value
    elif key == 'cpu_seconds' and report.when == 'teardown':
      _cpu_seconds[report.nodeid] = value


def pytest_terminal_summary(terminalreporter):
  if 'PYTEST_XDIST_WORKER' in os.environ or not _seconds:
    return
  write = terminalreporter.write_line
  over = sorted(((s, n) for n, s in _seconds.items() if s > LONG_SECONDS),
                reverse=True)
  terminalreporter.section('test budget')
  write(f'{len(_seconds)} tests: {sum(_seconds.values()):.0f} s of test time, '
        f'{sum(_cpu_seconds.values()):.0f} s of CPU time (summed over the '
        'workers and the processes the tests started)')
  dump = os.environ.get('ZOO_TEST_CPU_FILE')
  if dump:  # Every test's CPU seconds, for whoever trims the suite.
    with open(dump, 'w') as f:
      f.writelines(f'{s:.1f} {n}\n' for n, s in sorted(
          _cpu_seconds.items(), key=lambda item: -item[1]))
  write('the ten that take the most CPU time:')
  for nodeid, seconds in sorted(_cpu_seconds.items(),
                                key=lambda item: -item[1])[:10]:
    write(f'{seconds:6.1f} s  {nodeid}')
  for seconds, nodeid in over:
    if nodeid in _long_reasons:
      write(f'long, {seconds:.0f} s: {nodeid} ({_long_reasons[nodeid]})')
  unmarked = [(s, n) for s, n in over if n not in _long_reasons]
  for seconds, nodeid in unmarked:
    write(f'OVER {LONG_SECONDS:.0f} s AND NOT MARKED long: {nodeid} '
          f'({seconds:.0f} s)')
  if not unmarked:
    write(f'no unmarked test over {LONG_SECONDS:.0f} s')
