r"""Measure Atari frames/s of the reference and vectorized environments.

Random actions on one game; frames counted as emulator frames (4 per agent
step per stream); every mode and K in turns (--repeats rounds), medians side
by side with the reference mode at K=1 (DQN Zoo). Optionally measure how far
the vectorized mode's pixels are from the reference pipeline's on the same
emulator state. The last line, `figures:`, holds the figures as JSON.

  python -m scripts.benchmarks.bench_env --environment_name=asterix --num_frames=40000
  python -m scripts.benchmarks.bench_env --compare_pixels --compare_games=pong,asterix
"""

import time
from typing import Sequence

from absl import flags
import numpy as np

from scripts.analysis import tables
from scripts.benchmarks import harness
from zoo.configuration import cli
from zoo.environments import atari_data
from zoo.environments import atari_env
from zoo.environments import vector_env

_GAME = flags.DEFINE_string('environment_name', 'asterix', 'Atari game.')
_NUM_FRAMES = flags.DEFINE_integer(
    'num_frames', 40_000, 'Frames per measurement (all streams together).')
_NUM_ENVS = flags.DEFINE_list('num_envs', ['1', '4', '8', '16'],
                              'Stream counts K of the vectorized mode.')
_REFERENCE_NUM_ENVS = flags.DEFINE_list(
    'reference_num_envs', ['1'], 'Stream counts K of the reference mode.')
_NUM_THREADS = flags.DEFINE_integer(
    'num_threads', 0, 'Vectorized mode threads (0: min(K, CPU count)).')
_COMPARE_PIXELS = flags.DEFINE_bool(
    'compare_pixels', False,
    'Also measure the grey-level difference vector vs reference.')
_COMPARE_GAMES = flags.DEFINE_list(
    'compare_games', ['pong', 'breakout', 'asterix', 'seaquest', 'ms_pacman'],
    'Games for --compare_pixels.')
_COMPARE_STEPS = flags.DEFINE_integer('compare_steps', 500,
                                      'Agent steps per game compared.')


def frames_per_second(env, num_frames: int, rng) -> float:
  """Step `env` with random actions for about `num_frames` frames."""
  num_steps = max(1, num_frames // (4 * env.num_envs))
  actions = rng.integers(env.num_actions, size=(num_steps, env.num_envs))
  env.reset()
  start = time.perf_counter()
  for step_actions in actions:
    env.step(step_actions)
  return num_steps * 4 * env.num_envs / (time.perf_counter() - start)


def compare_pixels(game: str, num_steps: int) -> dict:
  """Mean |grey-level difference| of the newest frame, same emulator state."""
  vector = vector_env.VectorAtariEnvironment(game, 1, num_envs=1)
  first = vector.reset()
  noops = int(vector.noop_frames[0])
  reference = atari_env.AtariEnvironment(game, 1, min_noop_frames=noops,
                                         max_noop_frames=noops)
  pairs = [(first.observation[0, ..., 0], reference.reset().observation[...,
                                                                        0])]
  rng = np.random.default_rng(0)
  for _ in range(num_steps):
    action = int(rng.integers(vector.num_actions))
    v, r = vector.step(np.array([action])), reference.step(action)
    if v.step_type[0] != 1 or r.step_type != 1:
      break  # Episode over: the stacks' layouts may differ from here on.
    pairs.append((v.observation[0, ..., -1], r.observation[..., -1]))
  vector.close()
  v = np.stack([p[0] for p in pairs]).astype(np.int64)
  r = np.stack([p[1] for p in pairs]).astype(np.int64)
  return dict(steps=len(pairs), mean_abs=np.abs(v - r).mean(),
              mean_signed=(v - r).mean(),
              fraction_differing=(v != r).mean(),
              fraction_over_8=(np.abs(v - r) > 8).mean(),
              mean_vector=v.mean(), mean_reference=r.mean())


def main(argv: Sequence[str]) -> None:
  del argv
  atari_data.check_game(_GAME.value)
  for game in _COMPARE_GAMES.value if _COMPARE_PIXELS.value else ():
    atari_data.check_game(game)
  print(f'{_GAME.value}: {_NUM_FRAMES.value} frames per measurement, '
        f'median of {flags.FLAGS.repeats} rounds', flush=True)
  envs = {(mode, int(k)): atari_env.make_atari_environment(
      _GAME.value, seed=1, num_envs=int(k), mode=mode,
      num_threads=_NUM_THREADS.value)
          for mode, counts in (('reference', _REFERENCE_NUM_ENVS.value),
                               ('vector', _NUM_ENVS.value)) for k in counts}
  rng = np.random.default_rng(0)
  stats = harness.summary(harness.measure(
      {f'{mode} K={k}': lambda env=env: frames_per_second(
          env, _NUM_FRAMES.value, rng) for (mode, k), env in envs.items()},
      flags.FLAGS.repeats))
  for env in envs.values():
    env.close()
  (base_mode, base_k), = list(envs)[:1]
  base = stats[f'{base_mode} K={base_k}'][harness.VALUE].median
  rows = {}
  for mode, k in envs:
    s = stats[f'{mode} K={k}'][harness.VALUE]
    rows[mode, k] = {'frames/s (median)': f'{s.median:.0f}',
                     'min': f'{s.low:.0f}', 'max': f'{s.high:.0f}',
                     f'x {base_mode} K={base_k}': f'{s.median / base:.2f}'}
  figures = harness.report(
      'atari.bench_env', f'Atari frames/s, random actions ({_GAME.value})',
      ['mode', 'K'], {'frames/s (median)': ('frames_per_s', 'frames/s'),
                      'min': ('', ''), 'max': ('', ''),
                      f'x {base_mode} K={base_k}':
                      (f'vs_{base_mode}_{base_k}', 'x')}, rows, 'lrrrrr')
  if _COMPARE_PIXELS.value:
    harness.print_table(
        ['game', 'steps', 'mean abs diff', 'mean diff (vector - ref)',
         'pixels differing', 'pixels off by > 8', 'mean grey vector',
         'mean grey reference'], [])
    for game in _COMPARE_GAMES.value:  # Each row as it comes: slow.
      c = compare_pixels(game, _COMPARE_STEPS.value)
      print(tables.line([
          game, c['steps'], f"{c['mean_abs']:.2f}", f"{c['mean_signed']:+.2f}",
          f"{c['fraction_differing']:.1%}", f"{c['fraction_over_8']:.2%}",
          f"{c['mean_vector']:.1f}", f"{c['mean_reference']:.1f}"]),
            flush=True)
      what = (f'{game}, vectorized mode against the reference pipeline, '
              f'{c["steps"]} steps')
      figures += [
          harness.figure(f'atari.bench_env.pixels_mean_abs_diff:{game}',
                         f'{what}: mean |grey-level difference|',
                         f"{c['mean_abs']:.2f}", 'grey levels'),
          harness.figure(f'atari.bench_env.pixels_differing:{game}',
                         f'{what}: pixels differing',
                         f"{100 * c['fraction_differing']:.1f}", '%')]
  harness.print_figures(figures)


if __name__ == '__main__':
  harness.define_flags(repeats=3)
  cli.run(main)
