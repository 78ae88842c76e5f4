"""Tests for scripts.analysis.evaluate: a tiny real checkpoint played, a GIF written."""

import os
import re
import subprocess
import sys

import numpy as np
from PIL import Image
import pytest

from scripts.analysis import evaluate
from zoo.configuration import agent_registry
from zoo.loops import runner
from zoo.suites import atari_suite
from zoo.suites import minatar_suite
from zoo.configuration import settings as settings_lib

_preset = agent_registry.default_preset

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


@pytest.fixture(scope='module')
def checkpoint_dir(tmp_path_factory):
  """A real Pong checkpoint (iteration 0) whose episodes stop at 400 frames."""
  directory = tmp_path_factory.mktemp('run')
  settings = dict(
      settings_lib.default_settings(atari_suite.ATARI), environment_name='pong',
      replay_capacity=400, min_replay_capacity_fraction=0.1, batch_size=8,
      num_iterations=0, num_eval_frames=40, num_quantiles=11, hidden_size=16,
      max_frames_per_episode=400, results_csv_path='', tensorboard_dir='',
      checkpoint_dir=str(directory / 'checkpoints'))
  runner.run(atari_suite.ATARI, _preset('nc_cr_dqn'), settings)
  return str(directory / 'checkpoints')


def test_plays_episodes_prints_returns_and_writes_a_gif(checkpoint_dir,
                                                        tmp_path):
  video = tmp_path / 'pong.gif'
  result = subprocess.run(
      [sys.executable, '-m', 'scripts.analysis.evaluate',
       f'--checkpoint_dir={checkpoint_dir}', '--num_episodes=2',
       f'--video_path={video}', '--video_max_steps=60'],
      cwd=ROOT, env=dict(os.environ, PYTHONPATH=ROOT), capture_output=True,
      text=True, timeout=300)
  assert result.returncode == 0, result.stderr[-3000:]
  lines = result.stdout.splitlines()
  assert lines[0].startswith('nc_cr_dqn on atari pong, checkpoint ')
  assert lines[0].endswith('iteration_000000, ε = 0.001, 2 episodes')
  for i in (1, 2):  # The run's 400-frame cap ends them.
    assert re.fullmatch(rf'episode {i}: return -?\d+, human-normalised '
                        r'-?\d\.\d{3}, 40\d frames', lines[i]), lines[i]
  assert lines[3].startswith('mean return ')
  assert lines[4] == (f'video: {video} (60 screens of the first episode, 15 '
                      'per second)')
  with Image.open(video) as gif:
    assert gif.size == (160, 210) and gif.n_frames > 1  # Repeats merge.
    gif.seek(gif.n_frames - 1)
    assert gif.convert('RGB').getextrema() != ((0, 0),) * 3  # Not black.


def test_bad_requests_are_refused_before_playing(checkpoint_dir, tmp_path,
                                                 monkeypatch):
  with pytest.raises(ValueError, match='must end in one of .gif, .mp4'):
    evaluate.evaluate(checkpoint_dir, 1, video_path=str(tmp_path / 'x.avi'))
  monkeypatch.setattr(evaluate.shutil, 'which', lambda name: None)
  with pytest.raises(ValueError, match='an MP4 needs the ffmpeg program'):
    evaluate.evaluate(checkpoint_dir, 1, video_path=str(tmp_path / 'x.mp4'))
  with pytest.raises(ValueError, match='No checkpoint in'):
    evaluate.evaluate(str(tmp_path), 1)
  with pytest.raises(ValueError, match='--num_episodes must be positive'):
    evaluate.evaluate(checkpoint_dir, 0)


@pytest.mark.parametrize('agent', ['cr_dqn', 'iqn'])  # iqn: sampled levels.
def test_minatar_checkpoint_prints_returns_without_normalised_scores(
    agent, tmp_path):
  # MinAtar has no human reference scores: nothing normalised (no NaN).
  settings = dict(
      settings_lib.default_settings(minatar_suite.MINATAR),
      environment_name='breakout', replay_capacity=400,
      min_replay_capacity_fraction=0.1, batch_size=8, num_iterations=0,
      num_eval_frames=40, num_quantiles=11, hidden_size=16,
      results_csv_path='', tensorboard_dir='',
      checkpoint_dir=str(tmp_path / 'checkpoints'))
  runner.run(minatar_suite.MINATAR, _preset(agent), settings)
  lines = []
  episodes = evaluate.evaluate(str(tmp_path / 'checkpoints'), 2,
                               log=lines.append)
  assert len(episodes) == 2 and len(lines) == 4, lines
  for i, episode in zip((1, 2), episodes):
    assert lines[i] == (f'episode {i}: return {episode.episode_return:g}, '
                        f'{episode.num_frames} frames')
  assert lines[3].startswith('mean return ')
  assert lines[3].endswith(' (std over 2 episodes)')


def test_the_gif_plays_at_the_frame_rate_it_states(tmp_path):
  # 30 distinct screens: 2 s at 15 per second (Pillow merges equal ones).
  screens = [np.full((4, 6, 3), 8 * i, np.uint8) for i in range(30)]
  path = str(tmp_path / 'play.gif')
  evaluate.write_video(path, screens)
  durations = []
  with Image.open(path) as gif:
    assert gif.n_frames == 30
    for i in range(gif.n_frames):
      gif.seek(i)
      durations.append(gif.info['duration'])
  assert set(durations) == {60, 70}  # Hundredths of a second, in a GIF.
  # Every frame shows until its own time, i / 15 s, within the GIF's 10 ms.
  for i in range(1, 31):
    assert abs(sum(durations[:i]) - 1000 * i / evaluate.FRAMES_PER_SECOND) < 5
  assert sum(durations) == 2000


def test_help_shows_the_tools_own_flags_with_their_own_texts():
  def run(*args):
    return subprocess.run(
        [sys.executable, '-m', 'scripts.analysis.evaluate', *args], cwd=ROOT,
        capture_output=True, text=True, timeout=120)

  shown = run('--help')
  assert shown.returncode == 0
  listed = re.findall(r'^  --(\w+):', shown.stdout, re.MULTILINE)
  assert listed == ['checkpoint_dir', 'iteration', 'num_episodes', 'seed',
                    'video_max_steps', 'video_path']
  # The evaluation's own texts, not the run's (which resumes, seeds a run).
  assert "--checkpoint_dir: Required: the run's checkpoint directory" in (
      shown.stdout)
  assert '--seed: Seeds the evaluation environment' in shown.stdout
  assert 'resumed from' not in shown.stdout
  # The run's settings are the checkpoint's: none is a flag here.
  refused = run('--checkpoint_dir=x', '--eval_exploration_epsilon=0.1')
  assert refused.returncode == 1 and refused.stderr.strip() == (
      "Error: Unknown command line flag 'eval_exploration_epsilon' (--help "
      'lists the flags).')
