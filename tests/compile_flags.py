"""The suite's cheap XLA compiles, and the environment of a user's run.

The suite's programs are tiny and run a few times, so compiling them is most
of its cost; XLA's cheapest backend optimisation halves that. It also changes
the last bits of some floating-point results, and a reinforcement-learning
run that differs in one bit goes its own way. So a test that compares a run
with numbers recorded from a user's run (the reference CSVs, the learning
tests' margins) starts that run in `user_environment()`, which compiles as a
user's run does. Runs compared with each other need only the same flags.
"""

import os
from typing import Dict, List, Mapping, Optional

CHEAP = ('--xla_backend_optimization_level=0',
         '--xla_llvm_disable_expensive_passes=true')


def _other_flags(xla_flags: str) -> List[str]:
  return [flag for flag in xla_flags.split() if flag not in CHEAP]


def with_cheap_compiles(xla_flags: str = '') -> str:
  """Return XLA_FLAGS `xla_flags` with the suite's cheap compiles added."""
  return ' '.join(_other_flags(xla_flags) + list(CHEAP))


def user_environment(environ: Optional[Mapping[str, str]] = None,
                     **more: str) -> Dict[str, str]:
  """Return `environ` (default: this process's) as a user's run has it."""
  env = dict(os.environ if environ is None else environ, **more)
  flags = _other_flags(env.get('XLA_FLAGS', ''))
  if flags:
    env['XLA_FLAGS'] = ' '.join(flags)
  else:
    env.pop('XLA_FLAGS', None)
  return env
