"""Tests for tests/compile_flags.py: the suite compiles for one instruction set."""

import glob
import os
import subprocess
import sys

from tests import compile_flags

# A dot, a sort and a reduction: the kinds of operation whose compiled code
# XLA chooses by the host's features.
_PROGRAM = """
import jax, jax.numpy as jnp
f = jax.jit(lambda x, w: jnp.sort(jnp.tanh(x @ w), axis=-1).sum())
print(f(jnp.ones((64, 128)), jnp.ones((128, 256))))
"""


def _compile(tmp_path, xla_flags):
  """Return the optimised HLO and the disassembly of _PROGRAM's kernels."""
  dump = tmp_path / 'dump'
  subprocess.run([sys.executable, '-c', _PROGRAM], check=True, timeout=120,
                 capture_output=True, env=dict(
                     os.environ, XLA_FLAGS=f'{xla_flags} --xla_dump_to={dump}'))
  hlo = ''.join(open(path).read() for path in glob.glob(
      str(dump / '*jit__lambda.cpu_after_optimizations.txt')))
  objects = glob.glob(str(dump / '*jit__lambda*.o'))
  assert hlo and objects
  assembly = subprocess.run(['objdump', '-d'] + objects, check=True,
                            capture_output=True, text=True).stdout
  return hlo, assembly


def test_the_suite_compiles_for_avx2_with_xlas_own_kernels(tmp_path):
  hlo, assembly = _compile(tmp_path, os.environ['XLA_FLAGS'])
  assert all(flag in os.environ['XLA_FLAGS'].split()
             for flag in compile_flags.PORTABLE + compile_flags.CHEAP)
  assert os.environ['ONEDNN_MAX_CPU_ISA'] == 'AVX2'
  # No kernel that picks its code when it runs: YNNPACK's and XNNPACK's.
  assert 'ynn_fusion' not in hlo and 'xnn_fusion' not in hlo
  # No AVX-512 register in the code compiled here.
  assert 'zmm' not in assembly and 'ymm' in assembly


def test_without_the_flags_the_dot_goes_to_a_runtime_dispatched_kernel(
    tmp_path):
  hlo, _ = _compile(tmp_path, '')
  assert 'ynn_fusion' in hlo


def test_reference_environment_is_portable_without_the_cheap_compiles():
  env = compile_flags.reference_environment(
      {'XLA_FLAGS': '--xla_cpu_max_isa=AVX512 --xla_foo=1 ' +
                    ' '.join(compile_flags.CHEAP), 'HOME': '/h',
       'ONEDNN_MAX_CPU_ISA': 'AVX512_CORE'}, MORE='x')
  assert env['XLA_FLAGS'].split() == ['--xla_foo=1',
                                      *compile_flags.PORTABLE]
  assert env['ONEDNN_MAX_CPU_ISA'] == 'AVX2'
  assert env['HOME'] == '/h' and env['MORE'] == 'x'


def test_suite_environment_keeps_other_flags_and_sets_each_of_ours_once():
  env = compile_flags.suite_environment(
      {}, XLA_FLAGS='--xla_foo=1 --xla_backend_optimization_level=3')
  assert env['XLA_FLAGS'].split() == ['--xla_foo=1', *compile_flags.PORTABLE,
                                      *compile_flags.CHEAP]
  assert env['ONEDNN_MAX_CPU_ISA'] == 'AVX2'


def test_one_thread_environment_adds_one_thread_to_the_suites_flags():
  env = compile_flags.one_thread_environment(MORE='x')
  assert env['XLA_FLAGS'].split() == [*compile_flags.ONE_THREAD.split(),
                                      *compile_flags.PORTABLE,
                                      *compile_flags.CHEAP]
  assert env['MORE'] == 'x'
