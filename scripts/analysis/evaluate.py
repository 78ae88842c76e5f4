"""Evaluate a run's checkpoint: episode returns and a video of play.

  python -m scripts.analysis.evaluate --checkpoint_dir=runs/cr_dqn/pong/seed_1/checkpoints
      [--iteration=N] [--num_episodes=10] [--video_path=pong.gif|pong.mp4]
      [--seed=1]

Plays whole episodes with the newest intact checkpoint (or --iteration's)
under the DQN Zoo evaluation protocol and prints each episode's return,
human-normalised score and frames, then their mean; --video_path records the
first episode as a GIF or an MP4 (docs/running.md).
"""

import dataclasses
import functools
import os
import shutil
import subprocess
import sys
from typing import Callable, List, NamedTuple, Optional, Tuple

from absl import app
from absl import flags
import jax
import numpy as np

from zoo.agent import learning as agent_lib
from zoo.loops import build
from zoo.storage import checkpoint
from zoo.storage import checkpoint_read
from zoo.environments import environment
from zoo.storage import files
from zoo.environments import minatar_env
from zoo.configuration import settings as settings_lib
from zoo.configuration import suites
from zoo.configuration import cli

FLAGS = flags.FLAGS
VIDEO_FORMATS = ('.gif', '.mp4')
FRAMES_PER_SECOND = 15  # 60 Hz emulator, one screen per 4-frame step.


class Episode(NamedTuple):
  episode_return: float
  normalized_return: float
  num_frames: int


def define_flags() -> None:
  """Define this entry point's flags (only when run, to avoid flag clashes).

  No run flag: the run's settings come from the checkpoint.
  """
  flags.DEFINE_string('checkpoint_dir', None,
                      "Required: the run's checkpoint directory (its "
                      '--checkpoint_dir, e.g. '
                      'runs/cr_dqn/pong/seed_1/checkpoints).')
  flags.DEFINE_integer('seed', 1, 'Seeds the evaluation environment and its '
                       "ε draws (not the run's seed).")
  flags.DEFINE_integer('iteration', None,
                       "The checkpoint of this iteration (one of the run's "
                       'kept ones); unset: the newest intact one.')
  flags.DEFINE_integer('num_episodes', 10, 'Episodes to play.')
  flags.DEFINE_string('video_path', None,
                      'Record the first episode here: .gif, or .mp4 (needs '
                      'ffmpeg on PATH).')
  flags.DEFINE_integer('video_max_steps', 4500,
                       'At most this many screens in the video (4500: 5 '
                       'minutes of game time).')


def check_video_path(path: str) -> None:
  """Raise ValueError if a video cannot be written to `path`."""
  extension = os.path.splitext(path)[1].lower()
  if extension not in VIDEO_FORMATS:
    raise ValueError(f'--video_path={path}: the name must end in one of '
                     f'{", ".join(VIDEO_FORMATS)}.')
  if extension == '.mp4' and shutil.which('ffmpeg') is None:
    raise ValueError('--video_path: an MP4 needs the ffmpeg program on PATH '
                     f'(none found); install it, or write a GIF '
                     f'({os.path.splitext(path)[0]}.gif).')
  try:
    files.make_writable_directory(os.path.dirname(os.path.abspath(path)))
  except OSError as e:
    raise ValueError(f'--video_path={path}: cannot write there ({e}).') from e


def gif_durations(count: int, frames_per_second: float) -> List[int]:
  """Return each GIF frame's duration in ms, so that it plays at that rate.

  A GIF stores durations in hundredths of a second (Pillow truncates 67 ms to
  60: 16.7 frames/s for 15): each frame ends at its exact time, rounded to
  10 ms (15 frames/s: 70, 60, 70, 70, 60, 70, ...).
  """
  ends = [round((i + 1) * 100 / frames_per_second) * 10 for i in range(count)]
  return [end - start for start, end in zip([0] + ends[:-1], ends)]


def write_video(path: str, screens: List[np.ndarray]) -> None:
  """Write [H, W, 3] uint8 screens as a GIF or an MP4 (by the extension)."""
  if path.lower().endswith('.gif'):
    from PIL import Image  # pylint: disable=g-import-not-at-top
    images = [Image.fromarray(s) for s in screens]
    with files.atomic_path(path) as tmp:
      images[0].save(tmp, format='GIF', save_all=True,
                     append_images=images[1:], loop=0,
                     duration=gif_durations(len(images), FRAMES_PER_SECOND))
    return
  height, width = screens[0].shape[:2]
  with files.atomic_path(path) as tmp:
    subprocess.run(
        ['ffmpeg', '-loglevel', 'error', '-y', '-f', 'rawvideo', '-pix_fmt',
         'rgb24', '-s', f'{width}x{height}', '-r', str(FRAMES_PER_SECOND),
         '-i', '-', '-pix_fmt', 'yuv420p', '-f', 'mp4', tmp],
        input=b''.join(s.tobytes() for s in screens), check=True)


def play(env: environment.BatchedEnvironment, act: Callable, num_episodes: int,
         num_action_repeats: int, normalize: Callable[[float], float],
         render: Optional[Callable] = None, video_max_steps: int = 0,
         ) -> Tuple[List[Episode], List[np.ndarray]]:
  """Play whole episodes on stream 0 of a fresh `env`; return them and the
  first's screens (at most video_max_steps; none without render(env) ->
  [K, H, W, 3]). act(timestep) -> actions; normalize(return) -> its
  human-normalised score.
  """
  episodes, screens = [], []
  timestep = env.reset()
  episode_return, steps = 0.0, 0
  while True:
    if render is not None and not episodes and len(screens) < video_max_steps:
      screens.append(render(env)[0])
    episode_return += float(timestep.reward[0])
    steps += 1
    if timestep.step_type[0] == environment.LAST:
      episodes.append(Episode(episode_return, normalize(episode_return),
                              steps * num_action_repeats))
      if len(episodes) == num_episodes:
        return episodes, screens
      episode_return, steps = 0.0, 0
    timestep = env.step(act(timestep))


def evaluate(checkpoint_dir: str, num_episodes: int, seed: int = 1,
             video_path: Optional[str] = None, video_max_steps: int = 4500,
             log: Callable[[str], None] = print,
             iteration: Optional[int] = None,
             warn: Optional[Callable[[str], None]] = None) -> List[Episode]:
  """Play `num_episodes` with a run's parameters (module docstring).

  `iteration`: that checkpoint (None: the newest intact); `warn` (stderr) is
  told of damaged newer checkpoints skipped. Raises ValueError before any
  episode: no checkpoint (checkpoint.DamagedError: none intact, or the one
  asked for is damaged), a suite that cannot render a video, a bad path.
  """
  if num_episodes < 1:
    raise ValueError(f'--num_episodes must be positive, got {num_episodes}.')
  if video_path:
    check_video_path(video_path)
  warn = warn or (lambda text: print(text, file=sys.stderr, flush=True))
  try:
    path, damages = checkpoint_read.choose(checkpoint_dir, iteration)
  except checkpoint.DamagedError as e:
    raise checkpoint.DamagedError(
        f'{e} Pass another --checkpoint_dir' + (
            ', or the --iteration of an intact checkpoint it keeps'
            if iteration is not None else '') + '.', e.damages) from e
  except ValueError as e:
    if iteration is not None:
      raise  # The message lists the iterations kept.
    nested = os.path.join(checkpoint_dir, settings_lib.CHECKPOINT_DIR)
    if os.path.isdir(nested):
      hint = f' It holds {nested}: pass --checkpoint_dir={nested}.'
    else:
      hint = (" Pass a run's --checkpoint_dir (by default the checkpoints/ "
              'directory beside its results.csv, e.g. '
              'runs/cr_dqn/pong/seed_1/checkpoints).')
    raise ValueError(f'{e}{hint}') from e
  if damages:
    warn(checkpoint_read.fallback_warning(path, damages))
  params, settings = checkpoint_read.load_params(checkpoint_dir, path=path)
  suite = suites.suite_by_name(settings['suite'])
  if video_path and suite.render is None:
    raise ValueError(f'The {suite.name} suite cannot render a video yet.')
  # DQN Zoo evaluates one environment; the reference mode is its exact one.
  s = dataclasses.replace(settings_lib.Settings.from_dict(settings),
                          num_envs=1, environment_mode='reference')
  env = suite.make_environment(s, seed)
  # The run's network; at sampled levels it acts on the policy's levels.
  network = build.make_network(suite, s, env.num_actions)
  select = jax.jit(functools.partial(agent_lib.select_action, network))
  key = jax.random.PRNGKey(seed)

  def act(timestep):
    nonlocal key
    key, actions, _ = select(params, key, timestep.observation,
                             s.eval_exploration_epsilon)
    return np.asarray(actions)

  game = s.environment_name
  log(f'{settings["agent"]} on {suite.name} {game}, checkpoint {path}, ε = '
      f'{s.eval_exploration_epsilon}, {num_episodes} episodes')
  try:
    episodes, screens = play(
        env, act, num_episodes, s.num_action_repeats,
        lambda score: suite.normalize(game, score),
        suite.render if video_path else None, video_max_steps)
  finally:
    env.close()
  # MinAtar has no human reference scores: its normalised scores are NaN.
  scores = [e.normalized_return for e in episodes]
  normalized = not np.isnan(scores).any()
  for i, episode in enumerate(episodes):
    log(f'episode {i + 1}: return {episode.episode_return:g}, ' + (
        f'human-normalised {episode.normalized_return:.3f}, '
        if normalized else '') + f'{episode.num_frames} frames')
  returns = np.array([e.episode_return for e in episodes])
  log(f'mean return {returns.mean():g} ± {returns.std():g} (std over '
      f'{len(episodes)} episodes)' + (
          f', human-normalised {np.mean(scores):.3f}' if normalized else ''))
  if video_path:
    write_video(video_path, screens)
    log(f'video: {video_path} ({len(screens)} screens of the first episode, '
        f'{FRAMES_PER_SECOND} per second)')
  return episodes


def main(unused_argv):
  if not FLAGS.checkpoint_dir:
    raise app.UsageError("--checkpoint_dir is required (a run's "
                         '--checkpoint_dir, e.g. '
                         'runs/cr_dqn/pong/seed_1/checkpoints).')
  try:
    evaluate(FLAGS.checkpoint_dir, FLAGS.num_episodes, FLAGS.seed,
             FLAGS.video_path, FLAGS.video_max_steps, iteration=FLAGS.iteration)
  except (ValueError, minatar_env.NotInstalledError) as e:  # ConfigError too.
    sys.exit(f'Error: {e}')


if __name__ == '__main__':
  define_flags()
  cli.run(main)
