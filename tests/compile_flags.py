"""The suite's XLA settings: one instruction set on every CPU, cheap compiles.

Portable: XLA compiles for the host's instruction set, and the kernels it calls
(oneDNN's matrix products inside Eigen's, YNNPACK's and XNNPACK's fusions)
choose their code by the host's features when they run. So the same program
gives other last bits on a CPU with AVX-512 than on one with AVX2 only, and a
reinforcement-learning run that differs in one bit goes its own way. Every
process of the suite compiles for AVX2, which every x86-64 machine of the
project has, caps oneDNN at AVX2 and leaves YNNPACK and XNNPACK out, so that no
test's verdict depends on the CPU model (tests/data/reference_runs/README.md
says how this was checked).

Cheap: the suite's programs are tiny and run a few times, so compiling them is
most of its cost; XLA's cheapest backend optimisation halves that. It also
changes the last bits of some results, so a test that compares a run with
numbers recorded from a run (the reference CSVs, the learning tests' margins)
starts that run in `reference_environment()`: portable, and compiled as a
user's run is. Runs compared with each other need only the same settings.
"""

import os
from typing import Dict, List, Mapping, Optional, Sequence

PORTABLE = ('--xla_cpu_max_isa=AVX2',
            '--xla_cpu_experimental_ynn_fusion_type=',
            '--xla_cpu_use_xnnpack=false')
# Read by oneDNN when it first runs, so set before the process starts JAX.
PORTABLE_VARIABLES = {'ONEDNN_MAX_CPU_ISA': 'AVX2'}
CHEAP = ('--xla_backend_optimization_level=0',
         '--xla_llvm_disable_expensive_passes=true')


def _name(flag: str) -> str:
  return flag.split('=')[0]


def _other_flags(xla_flags: str) -> List[str]:
  """Return the flags of `xla_flags` that set none of the suite's."""
  ours = {_name(flag) for flag in PORTABLE + CHEAP}
  return [flag for flag in xla_flags.split() if _name(flag) not in ours]


def _environment(environ: Optional[Mapping[str, str]], flags: Sequence[str],
                 more: Mapping[str, str]) -> Dict[str, str]:
  env = dict(os.environ if environ is None else environ, **more)
  env.update(PORTABLE_VARIABLES)
  env['XLA_FLAGS'] = ' '.join(_other_flags(env.get('XLA_FLAGS', '')) +
                              list(flags))
  return env


def suite_environment(environ: Optional[Mapping[str, str]] = None,
                      **more: str) -> Dict[str, str]:
  """Return `environ` (default: this process's) updated by `more`, portable
  and compiling cheaply: the environment of every process of the suite."""
  return _environment(environ, PORTABLE + CHEAP, more)


def reference_environment(environ: Optional[Mapping[str, str]] = None,
                          **more: str) -> Dict[str, str]:
  """Return `environ` (default: this process's) updated by `more`, for a run
  compared with a recorded one: portable, compiled as a user's run is."""
  return _environment(environ, PORTABLE, more)


# One XLA thread: multi-threaded CPU kernels may split sums differently from
# run to run (a 1-ulp difference seen once under load), so two processes
# compared bit for bit (a killed run resumed against an uninterrupted one)
# each run on one thread.
ONE_THREAD = '--xla_cpu_multi_thread_eigen=false intra_op_parallelism_threads=1'


def one_thread_environment(**more: str) -> Dict[str, str]:
  """Return the suite's environment updated by `more`, with one XLA thread."""
  return suite_environment(XLA_FLAGS=ONE_THREAD, **more)
