"""Tests of zoo.loops.jitted_loop and the modules it drives (zoo.loops.jitted_train,
zoo.replay.packed_replay): the learner is zoo.agent's, the replay's rules, the CSVs,
resume through zoo.loops.resume, and learning on a fake JAX environment
(tests.jax_bandit)."""

import dataclasses
import functools
import json
import logging
import math
import os
import signal

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import pytest

import networks
from tests import csv_check
from tests import jax_bandit
from tests import tb_events
from tests import test_zoo_interrupts
from cr_dqn import agent as cr_dqn_agent
from qr_dqn import agent as qr_dqn_agent
from zoo.agent import counts as counts_lib
from zoo.agent import learning as agent_lib
from zoo.agent import quantile_agent
from zoo.loops import build
from zoo.loops import runner
from zoo.loops import interrupts
from zoo.loops import jitted_loop
from zoo.loops import jitted_train
from zoo.replay import packed_replay
from zoo.replay import frame_replay as replay_lib
from zoo.storage import results_csv
from zoo.loops import resume
from zoo.suites import minatar_suite
from zoo.configuration import agent_registry
from zoo.configuration import settings as settings_lib

NUM_QUANTILES = 11
OBS_SHAPE = (10, 10, 2)
# The paper's five agents: (head, loss, κ, scale_grad).
AGENTS = {
    'QR-DQN-1': ('fc', 'qr', 1.0, False),
    'QR-DQN-0': ('fc', 'qr', 0.0, False),
    'CR-DQN': ('fc', 'cramer', 1.0, False),
    'NC-CR-DQN': ('nc', 'cramer', 1.0, False),
    'NC-QR-DQN-0': ('nc', 'qr', 0.0, True),
    # Sampled levels (counts: policy, online, target).
    'IQN': ('iqn', 'sampled_qr', 1.0, False),
    'CR-IQN': ('iqn', 'sampled_cramer', 1.0, False),
}
LEVEL_COUNTS = agent_lib.LevelCounts(policy=5, online=7, target=6)


def _config(stream_capacity=64, **overrides) -> counts_lib.Counts:
  values = dict(
      num_streams=1, observation_shape=OBS_SHAPE + (1,), batch_size=8,
      min_replay_size=16, learn_period=4, target_period=16,
      num_action_repeats=1, additional_discount=0.99, max_abs_reward=10.0,
      grad_scale=1.0, eval_epsilon=0.001,
      epsilon=agent_lib.LinearSchedule(1.0, 0.1, 16, 100),
      num_train_frames=64, num_eval_frames=32)
  values.update(overrides)
  return counts_lib.Counts(
      replay_capacity=stream_capacity * values['num_streams'], **values)


def _id_observation(step_id: int) -> np.ndarray:
  """Return a binary observation whose first 16 bits spell `step_id`."""
  obs = np.zeros(OBS_SHAPE, np.uint8).reshape(-1)
  obs[:16] = [(step_id >> b) & 1 for b in range(16)]
  return obs.reshape(OBS_SHAPE)


def _decode(observation: np.ndarray) -> int:
  bits = np.asarray(observation).reshape(-1)[:16]
  return int(sum(int(v) << b for b, v in enumerate(bits)))


# Jitted once for the module: a lambda jitted per call compiles per call.
_store = jax.jit(packed_replay.store, static_argnums=4)
_sample = jax.jit(packed_replay.sample, static_argnums=(2, 3))
_REPLAY = packed_replay.jax_replay(OBS_SHAPE)


def _filled_replay(cfg, num_steps: int, episode_length: int, seed: int = 0):
  """Store num_steps steps of K streams with ids; return (state, steps).

  steps[(k, id)] = (step_type, action, reward, discount); ids count every
  stream's steps from 1.
  """
  k = cfg.num_streams
  rng = np.random.default_rng(seed)
  replay = packed_replay.empty(k, cfg.stream_capacity, OBS_SHAPE)
  episode_step = jnp.zeros(k, jnp.int32)
  steps = {}
  for t in range(num_steps):
    step_type = np.array([0 if (t + j) % episode_length == 0 else
                          (2 if (t + j) % episode_length == episode_length - 1
                           else 1) for j in range(k)], np.int8)
    reward = rng.integers(-3, 4, k).astype(np.float32)
    discount = np.where(step_type == 2, 0.0, 1.0).astype(np.float32)
    action = rng.integers(0, 3, k).astype(np.int32)
    obs = np.stack([_id_observation(t + 1) for _ in range(k)])
    timestep = jax_bandit.TimeStep(step_type, reward, discount, obs)
    replay, episode_step = _store(replay, episode_step, timestep, action,
                                  cfg.max_abs_reward)
    for j in range(k):
      steps[(j, t + 1)] = (int(step_type[j]), int(action[j]), float(reward[j]),
                           float(discount[j]))
  return replay, steps


def test_pack_round_trip():
  rng = np.random.default_rng(0)
  obs = rng.integers(0, 2, (3,) + OBS_SHAPE).astype(np.uint8)
  packed = packed_replay.pack(obs)
  assert packed.shape == (3, 25)
  np.testing.assert_array_equal(packed_replay.unpack(packed, OBS_SHAPE), obs)


@pytest.mark.parametrize('num_streams', [1, 2])
def test_sampling_rules(num_streams):
  """Only valid transitions, of held steps, uniformly, as zoo.replay.frame_replay's."""
  cfg = _config(num_streams=num_streams, stream_capacity=20)
  num_steps, episode_length = 50, 6  # Wraps: 30 steps overwritten.
  replay, steps = _filled_replay(cfg, num_steps, episode_length)
  key = jax.random.PRNGKey(0)
  counts = {}
  for _ in range(4):
    key, batch = _sample(replay, key, 512, OBS_SHAPE)
    batch = jax.device_get(batch)  # NumPy: no JAX dispatch per element.
    for i in range(512):
      id_tm1 = _decode(batch.s_tm1[i, ..., 0])
      id_t = _decode(batch.s_t[i, ..., 0])
      assert id_t == id_tm1 + 1
      assert id_tm1 > num_steps - cfg.stream_capacity  # Still held.
      # Either stream may have drawn it: find the stream whose steps match.
      matches = [j for j in range(num_streams)
                 if steps[(j, id_t)][0] != 0 and
                 steps[(j, id_tm1)][1] == int(batch.a_tm1[i]) and
                 steps[(j, id_t)][2] == float(batch.r_t[i]) and
                 steps[(j, id_t)][3] == float(batch.discount_t[i])]
      assert matches, (id_tm1, id_t)
      counts[(matches[0], id_t)] = counts.get((matches[0], id_t), 0) + 1
  valid = [(j, t) for (j, t), (step_type, *_) in steps.items()
           if t > num_steps - cfg.stream_capacity + 1 and step_type != 0]
  # Every valid transition drawn, none far from uniform (2048 draws).
  expected = 2048 / len(valid)
  assert set(counts) <= set(valid)
  assert len(counts) == len(valid) or num_streams > 1  # Streams share ids.
  assert max(counts.values()) < 3 * expected + 10


def _n_step_return(steps, stream, id_t, n_step):
  """Return (a_tm1, r_t, discount_t, id of s_t) of the n-step transition at
  step `id_t`, summed step by step (None: its steps are not all stored)."""
  reward, discount, last = 0.0, 1.0, id_t
  for k in range(n_step.n):
    _, _, r, d = steps[(stream, id_t + k)]
    reward += n_step.discount**k * r
    discount *= (n_step.discount if k else 1.0) * d
    last = id_t + k
    if d == 0 or k == n_step.n - 1:
      break
    if (stream, id_t + k + 1) not in steps:
      return None
    if steps[(stream, id_t + k + 1)][0] == 0:  # The episode ended.
      break
  return steps[(stream, id_t - 1)][1], reward, discount, last


def test_the_packed_replay_samples_n_step_returns():
  n_step = replay_lib.NStep(n=3, discount=0.5)
  cfg = _config(num_streams=2, stream_capacity=20)
  num_steps = 50
  replay, steps = _filled_replay(cfg, num_steps, episode_length=6)
  sample = jax.jit(packed_replay.jax_replay(OBS_SHAPE, n_step).sample,
                   static_argnums=2)
  _, batch = jax.device_get(sample(replay, jax.random.PRNGKey(0), 512))
  lengths = set()
  for i in range(512):
    id_tm1 = _decode(batch.s_tm1[i, ..., 0])
    id_t = id_tm1 + 1
    assert id_tm1 > num_steps - cfg.stream_capacity  # Still held.
    drawn = (int(batch.a_tm1[i]), float(batch.r_t[i]),
             float(batch.discount_t[i]), _decode(batch.s_t[i, ..., 0]))
    # Either stream may have drawn it: one stream's return must match.
    assert any(steps[(j, id_t)][0] != 0 and
               _n_step_return(steps, j, id_t, n_step) == drawn
               for j in range(2)), (id_tm1, drawn)
    lengths.add(drawn[3] - id_tm1)
  assert lengths == {1, 2, 3}  # Cut by episode ends, and whole.


def test_the_loop_samples_the_settings_n_step_returns(tmp_path):
  values = dict(_values(str(tmp_path)), n_steps=3, additional_discount=0.5)
  del values['loop']
  s = _resolved(**values)
  loop = jitted_loop.make(minatar_suite.MINATAR, cr_dqn_agent.PRESETS[0],
                          [s], env=jax_bandit.streams())
  replay, _ = _filled_replay(_config(), 40, episode_length=7)
  sample = loop._replay.sample  # pylint: disable=protected-access
  _, batch = jax.jit(sample, static_argnums=2)(replay, jax.random.PRNGKey(0),
                                               64)
  # Whole 3-step returns bootstrap with γ^2 (the learner applies one more).
  assert 0.25 in np.asarray(batch.discount_t).tolist()


def _agent_parts(head, loss, kappa, scale_grad, num_actions=3):
  if head == 'iqn':
    network = agent_lib.at_sampled_levels(hk.transform(
        networks.minatar_iqn_network(num_actions, hidden_size=16)),
                                          LEVEL_COUNTS)
    num_atoms = LEVEL_COUNTS.online
  else:
    network = hk.transform(networks.minatar_quantile_network(
        num_actions, NUM_QUANTILES, head=head, hidden_size=16))
    num_atoms = NUM_QUANTILES
  eps = agent_registry.default_optimizer_epsilon(loss, num_atoms, scale_grad)
  optimizer = agent_lib.make_optimizer(1e-3, eps, 10.0)
  grad_scale = 2.0 / NUM_QUANTILES if scale_grad else 1.0
  loss_of_kappa = functools.partial(agent_lib.make_loss_fn, loss)
  return network, loss_of_kappa, optimizer, grad_scale


@functools.lru_cache(maxsize=None)
def _update_replay(cfg):
  """Return the replay every agent learns from (one for all of them)."""
  return _filled_replay(cfg, 40, 7)[0]


@pytest.mark.parametrize('name', list(AGENTS))
def test_update_equals_zoo_agent(name):
  """One jitted learn = QuantileAgent.learn_from on the same params, batch."""
  head, loss, kappa, scale_grad = AGENTS[name]
  network, loss_of_kappa, optimizer, grad_scale = _agent_parts(
      head, loss, kappa, scale_grad)
  loss_fn = loss_of_kappa(kappa)  # The Python loop's: κ a float.
  cfg = _config(grad_scale=grad_scale)
  env = jax_bandit.streams()
  functions = jitted_train.make_train(cfg, env, _REPLAY, network,
                                      loss_of_kappa, optimizer)
  seed_key = jax.random.PRNGKey(3)  # Both loops: build.learner_parts'.
  state = jax.jit(functions.init)(
      seed_key, jitted_train.Phase(jax.random.PRNGKey(0), jnp.zeros(1, int)),
      jnp.float32(kappa), env.initial_state())
  filled = _update_replay(_config())
  agent = quantile_agent.QuantileAgent(
      network=network, loss_fn=loss_fn, optimizer=optimizer,
      replay=replay_lib.FrameReplay(64, 1, OBS_SHAPE, 1), config=cfg,
      rng_key=seed_key)
  # The same initial parameters as the Python loop's agent of that seed.
  jax.tree.map(np.testing.assert_array_equal, agent.get_state()['params'],
               jax.device_get(state.params))
  # Distinct online and target parameters, and a non-zero Adam state.
  state = state._replace(
      replay=filled,
      params=jax.tree.map(lambda x: x * 1.1, state.params),
      target_params=jax.tree.map(lambda x: x * 0.9, state.params))
  learn = jax.jit(jitted_train.make_learn(cfg, _REPLAY, network,
                                          loss_of_kappa, optimizer))
  state, _ = learn(state)
  before = state
  after, loss_value = learn(before)
  # The batch that learn drew: its sampler with the same key.
  key, batch = _sample(before.replay, before.rng_key, cfg.batch_size,
                       OBS_SHAPE)
  host = jax.device_get(before)
  agent.set_state({'params': host.params, 'target_params': host.target_params,
                   'opt_state': host.opt_state, 'rng_key': key,
                   'eval_rng_key': key, 'frame_t': 0, 'num_updates': 0,
                   'num_pending_updates': 0})
  stacks_first = batch._replace(s_tm1=jnp.moveaxis(batch.s_tm1, -1, 1),
                                s_t=jnp.moveaxis(batch.s_t, -1, 1))
  agent_loss = agent.learn_from(stacks_first)
  expected = agent.get_state()
  np.testing.assert_allclose(float(loss_value), float(agent_loss), rtol=1e-5)
  for field in ('params', 'opt_state'):
    jax.tree.map(
        lambda want, got: np.testing.assert_allclose(want, got, rtol=2e-5,
                                                     atol=1e-6),
        expected[field], jax.device_get(getattr(after, field)))
  moved = jax.tree.leaves(jax.tree.map(lambda a, b: np.abs(a - b).max(),
                                       host.params, after.params))
  assert max(moved) > 0  # The update changed something.


def _resolved(preset=cr_dqn_agent.PRESETS[0], **values
              ) -> settings_lib.Settings:
  return settings_lib.resolve_settings(
      minatar_suite.MINATAR, preset,
      dict(settings_lib.default_settings(minatar_suite.MINATAR), loop='jitted',
           **values))


def test_loop_config_refuses_unfit_settings():
  with pytest.raises(settings_lib.ConfigError, match='one must divide') as e:
    jitted_loop.loop_config(_resolved(num_envs=3), OBS_SHAPE)
  assert 'multiple' not in str(e.value)  # No block size without whole updates.
  with pytest.raises(settings_lib.ConfigError,
                     match='multiple of 4 frames .a block of 2 steps'):
    jitted_loop.loop_config(_resolved(num_envs=2, num_train_frames=1002),
                            OBS_SHAPE)
  # Blocks of one step: a phase ends at the step that spends its budget.
  jitted_loop.loop_config(_resolved(num_envs=8, num_train_frames=1004),
                          OBS_SHAPE)
  with pytest.raises(settings_lib.ConfigError, match='num_fused_updates'):
    jitted_loop.loop_config(_resolved(num_envs=8, num_fused_updates=2),
                            OBS_SHAPE)
  with pytest.raises(settings_lib.ConfigError, match='replay_on_device'):
    jitted_loop.loop_config(_resolved(replay_on_device=True), OBS_SHAPE)
  with pytest.raises(settings_lib.ConfigError, match='overlap_learning'):
    jitted_loop.loop_config(_resolved(overlap_learning=True), OBS_SHAPE)
  cfg = jitted_loop.loop_config(_resolved(), (10, 10, 4))
  assert (cfg.min_replay_size, cfg.learn_period, cfg.target_period,
          cfg.stream_capacity, cfg.batch_size) == (5000, 4, 1000, 100_000, 32)
  assert (cfg.steps_per_block, cfg.updates_per_block) == (4, 1)
  assert packed_replay.jax_replay((10, 10, 4)).nbytes(
      1, cfg.stream_capacity) == 100_000 * (50 + 16) + 4


def test_check_makes_no_environment_and_needs_the_suites_jax_one():
  def refuse(s):
    raise AssertionError('check made an environment')

  suite = minatar_suite.MINATAR._replace(jax_environment=refuse)
  jitted_loop.check(suite, _resolved())
  with pytest.raises(settings_lib.ConfigError, match='unfit|divide'):
    jitted_loop.check(suite, _resolved(num_envs=3))
  with pytest.raises(settings_lib.ConfigError,
                     match='has no JAX environment; use --loop=python'):
    jitted_loop.check(suite._replace(jax_environment=None),
                      _resolved())


def test_chunks_cut_a_phase_in_at_most_two_lengths():
  assert jitted_loop.chunk_sizes(250) == [250]
  assert jitted_loop.chunk_sizes(25_000) == [1000] * 25
  assert jitted_loop.chunk_sizes(3907, 256) == [256] * 15 + [67]


def test_presets_apart_only_in_kappa_share_one_program():
  """κ is data: QR-DQN-1 and QR-DQN-0 lower the same training program (and
  share the loop's functions); CR-DQN's is another."""
  env = jax_bandit.streams()

  def lowered(preset):
    s = _resolved(preset, num_train_frames=800, num_eval_frames=100,
                  replay_capacity=2000, num_quantiles=NUM_QUANTILES,
                  hidden_size=16)
    cfg = jitted_loop.loop_config(s, env.observation_shape)
    parts = build.learner_parts(minatar_suite.MINATAR, s, env.num_actions)
    functions = jitted_train.make_train(
        cfg, env, _REPLAY, parts.network, parts.loss_of_kappa,
        parts.optimizer)
    states = jax.eval_shape(
        jax.vmap(functions.init), parts.agent_key[None],
        jitted_loop.phases([s.seed], 1, 1, 'train'),
        jitted_loop.huber_params([s]),
        jax.tree.map(lambda x: x[None], env.initial_state()))
    text = jax.jit(functions.train_chunk, static_argnums=2).lower(
        states, jnp.int32(0), 1).as_text()
    return text, jitted_loop._functions(minatar_suite.MINATAR, s, cfg, env,
                                        _REPLAY, parts)

  qr1, qr0 = (lowered(p) for p in qr_dqn_agent.PRESETS[:2])
  assert qr1[0] == qr0[0]
  assert qr1[1] is qr0[1]
  assert lowered(cr_dqn_agent.PRESETS[0])[0] != qr1[0]


def test_loop_is_a_stored_setting():
  """A Python-loop checkpoint resumes only --loop=python."""
  saved = dataclasses.replace(_resolved(), loop='python').checkpoint_config()
  assert resume.config_differences(
      saved, _resolved().checkpoint_config(), resume.EXTENDABLE) == [
          "--loop='python' in the checkpoint, 'jitted' now"]


def _values(root, num_iterations=3):
  run_dir = os.path.join(root, '{agent}/seed_{seed}')
  # Batches of 8, not MinAtar's 32: the updates are most of these runs' CPU
  # time (a run took 1.8 times as long at 32), and the bandit is still learnt
  # as asserted.
  return dict(
      loop='jitted', num_iterations=num_iterations, num_train_frames=800,
      num_eval_frames=100, replay_capacity=2000,
      min_replay_capacity_fraction=0.1, target_network_update_period=100,
      num_quantiles=NUM_QUANTILES, hidden_size=16, learning_rate=1e-3,
      batch_size=8,
      exploration_epsilon_decay_frame_fraction=0.1,
      results_csv_path=os.path.join(run_dir, 'results.csv'),
      checkpoint_dir=os.path.join(run_dir, 'checkpoints'),
      tensorboard_dir='', progress_interval_seconds=0.0)


def _run(values, seeds, log=lambda *a: None, restart=False):
  return runner.run_seeds(minatar_suite.MINATAR, cr_dqn_agent.PRESETS[0],
                              values, seeds, restart=restart,
                              env=jax_bandit.streams(), log=log)


@pytest.mark.end_to_end
def test_csvs_learning_and_resume(tmp_path):
  """One CSV per seed; the bandit is learnt; an interrupted run resumes equal.

  Each seed logs the Python loop's lines and writes its TensorBoard scalars.
  """
  lines = []
  whole = _run(dict(_values(str(tmp_path / 'whole')),
                    tensorboard_dir=str(tmp_path / 'whole' / 'tb_{seed}'),
                    tensorboard_loss_period=400), [1, 2],
               log=lambda *a: lines.append(a[0] % a[1:]))
  for seed, seed_rows in zip((1, 2), whole):
    # Blocks of 4 frames learn from the one ending at 200 frames held.
    assert any(line.startswith(f'seed {seed}: iteration 1/3, frame 800: '
                               'eval return') and
               f'updates {(800 - 200) // 4 + 1},' in line
               for line in lines), lines
    scalars = tb_events.read_scalars(str(tmp_path / 'whole' / f'tb_{seed}'))
    assert [step for step, _ in scalars['eval/episode_return']] == [
        0, 800, 1600, 2400]
    assert [value for _, value in scalars['eval/episode_return']] == [
        pytest.approx(r['eval_episode_return']) for r in seed_rows]
    assert scalars['train/state_value'][0][1] == pytest.approx(
        seed_rows[1]['train_state_value'])
    losses = scalars['train/loss']
    assert len(losses) >= 3 and all(math.isfinite(v) for _, v in losses)
    assert 'eval/normalized_return' not in scalars  # MinAtar's is NaN.
  for seed in (1, 2):
    path = tmp_path / 'whole' / 'cr_dqn' / f'seed_{seed}' / 'results.csv'
    rows = csv_check.read_back_file(str(path))
    assert list(rows[0]) == list(results_csv.COLUMNS)
    assert [r['iteration'] for r in rows] == ['0', '1', '2', '3']
    assert {r['seed'] for r in rows} == {str(seed)}
    assert {r['agent'] for r in rows} == {'cr_dqn'}
    assert rows[0]['environment_name'] == 'minatar-breakout'
    assert rows[-1]['frame'] == '2400'
    # Random play earns 4/3 per episode, greedy play 4.
    assert float(rows[0]['eval_episode_return']) < 2.5
    assert float(rows[-1]['eval_episode_return']) > 3.5
    assert float(rows[-1]['train_exploration_epsilon']) == pytest.approx(0.1)
    saved = json.loads((path.parent / 'run.json').read_text())
    assert saved['settings']['loop'] == 'jitted'
    assert saved['settings']['seed'] == seed
  assert whole[0] != whole[1]  # The seeds differ.
  # Complete: nothing runs again.
  again = _run(_values(str(tmp_path / 'whole')), [1, 2])
  assert ([[r['eval_episode_return'] for r in rows] for rows in again] ==
          [[r['eval_episode_return'] for r in rows] for rows in whole])

  # Interrupted after iteration 1's checkpoint.
  values = _values(str(tmp_path / 'split'))

  def interrupted(restart=False):
    with test_zoo_interrupts.installed_handlers():
      def log(message, *args):
        if (message.startswith('%siteration %d/%d, frame') and
            args[:2] == ('seed 1: ', 1)):
          signal.raise_signal(signal.SIGINT)

      with pytest.raises(interrupts.Interrupted, match='iteration 2'):
        _run(values, [1, 2], log=log, restart=restart)

  interrupted()
  path = tmp_path / 'split' / 'cr_dqn' / 'seed_2' / 'results.csv'
  assert len(csv_check.read_back_file(str(path))) == 2

  # Seeds at different iterations do not resume together.
  with pytest.raises(settings_lib.ConfigError, match='different iterations'):
    _run(values, [1, 2, 3])
  # A damaged newest checkpoint: zoo.loops.resume falls back to the previous one,
  # which stands at another iteration than seed 1's.
  seed_2 = tmp_path / 'split' / 'cr_dqn' / 'seed_2' / 'checkpoints'
  newest = sorted(p for p in seed_2.iterdir() if p.name.startswith('iter'))[-1]
  with open(newest / 'tree.npz', 'r+b') as f:
    f.write(b'damaged')
  with pytest.raises(settings_lib.ConfigError, match='different iterations'):
    _run(values, [1, 2])
  # --restart moves the group's files aside and starts over (interrupted
  # again after iteration 1: one run shows both the restart and the resume).
  interrupted(restart=True)  # Compiled already: reused.
  for seed in (1, 2):
    moved = {p.name.split('.')[0] for p in (seed_2.parent.parent /
                                            f'seed_{seed}').iterdir()
             if p.name.endswith('.bak')}
    assert moved == {'checkpoints', 'results', 'run'}, moved
  assert len(csv_check.read_back_file(str(path))) == 2  # A new CSV.
  # Resumed: every iteration as in the uninterrupted run.
  resumed = _run(values, [1, 2])
  assert [len(r) for r in resumed] == [4, 4]
  for seed_rows, whole_rows in zip(resumed, whole):
    for got, want in zip(seed_rows, whole_rows):
      for column in results_csv.DETERMINISTIC_COLUMNS:
        np.testing.assert_equal(got[column], want[column], err_msg=column)


@pytest.mark.end_to_end
def test_cr_iqn_learns_the_bandit_and_resumes(tmp_path):
  """CR-IQN in the jitted loop: 1 iteration, then extended to 2 from the
  checkpoint (the same ε schedule: 240 frames); greedy play at the end."""
  preset = agent_registry.presets()['CR-IQN']
  levels = dict(tau_samples_policy=8, tau_samples_s_tm1=8, tau_samples_s_t=8)
  # CR-IQN learns the bandit in time with batches of 16 (not 8).
  values = dict(_values(str(tmp_path), num_iterations=1), batch_size=16,
                **levels)
  run = lambda v: runner.run_seeds(minatar_suite.MINATAR, preset, v, [1],
                                   env=jax_bandit.streams())[0]
  first = run(dict(values, exploration_epsilon_decay_frame_fraction=0.3))
  assert [r['iteration'] for r in first] == [0, 1]
  lines = []
  rows = runner.run_seeds(
      minatar_suite.MINATAR, preset,
      dict(values, num_iterations=2,
           exploration_epsilon_decay_frame_fraction=0.15), [1],
      env=jax_bandit.streams(), log=lambda *a: lines.append(a[0] % a[1:]))[0]
  assert [r['iteration'] for r in rows] == [0, 1, 2]
  for got, want in zip(rows, first):  # Iterations 0-1 kept, not rerun.
    for column in results_csv.DETERMINISTIC_COLUMNS:
      np.testing.assert_equal(got[column], want[column], err_msg=column)
  assert not any('iteration 1/2' in line for line in lines), lines
  saved = json.loads((tmp_path / 'iqn' / 'seed_1' / 'run.json').read_text())
  assert (saved['settings']['head'], saved['settings']['loss']) == (
      'iqn', 'sampled_cramer')
  # Random play earns 4/3 per episode, greedy play 4.
  assert float(rows[0]['eval_episode_return']) < 2.5
  assert float(rows[-1]['eval_episode_return']) > 3.5


@pytest.mark.end_to_end
def test_training_streams_go_on_and_resume_exactly_at_k2(tmp_path):
  """K = 2: episodes outlast a phase; the resumed run equals the whole one."""
  # 400 steps per stream per phase, episodes of 600: none ends in
  # iteration 1, each stream's first ends in iteration 2.
  env = jax_bandit.streams(2, episode_length=600)

  def run(root, log=lambda *a: None):
    values = dict(_values(str(root), num_iterations=2), num_envs=2)
    return runner.run_seeds(minatar_suite.MINATAR, cr_dqn_agent.PRESETS[0],
                                values, [1], env=env, log=log)[0]

  whole = run(tmp_path / 'whole')
  assert [r['train_num_episodes'] for r in whole[1:]] == [0, 2]
  assert np.isnan(whole[1]['train_episode_return'])  # Never a partial one.
  # Each episode's return spans both phases: at most 599 rewarded steps.
  assert 200 < whole[2]['train_episode_return'] <= 599
  with test_zoo_interrupts.installed_handlers():
    def log(message, *args):
      if message.startswith('%siteration %d/%d, frame') and args[1] == 1:
        signal.raise_signal(signal.SIGINT)

    with pytest.raises(interrupts.Interrupted, match='iteration 2'):
      run(tmp_path / 'split', log=log)
  resumed = run(tmp_path / 'split')
  for got, want in zip(resumed, whole):
    for column in results_csv.DETERMINISTIC_COLUMNS:
      np.testing.assert_equal(got[column], want[column], err_msg=column)


# Atari: the jitted loop on ale-py's XLA emulators (zoo.environments.atari_jax_env).
# Learning starts at 4,000 frames (1,000 transitions of K = 4 streams).
ATARI_VALUES = dict(
    environment_name='breakout', num_envs=4, num_train_frames=2040,
    num_eval_frames=400, replay_capacity=2000,
    min_replay_capacity_fraction=0.5, target_network_update_period=512,
    num_quantiles=NUM_QUANTILES, hidden_size=32, progress_interval_seconds=0.0)


def _atari_network(observations):
  """A small network on Atari's stacks: the loops, not the torso, are tested
  (compiling the Nature torso would be most of the test's time)."""
  return networks.quantile_network(
      networks.mlp_torso([16]),
      networks.fc_quantile_head(4, NUM_QUANTILES, 1, 16))(observations)


def _atari_run(root, loop, num_iterations, log=lambda *a: None):
  from zoo.suites import atari_suite  # pylint: disable=g-import-not-at-top
  values = dict(ATARI_VALUES, loop=loop, environment_mode='vector',
                num_iterations=num_iterations,
                # ε decays over the same 1,530 frames whatever the iterations.
                exploration_epsilon_decay_frame_fraction=0.75 / num_iterations,
                results_csv_path=os.path.join(root, 'results.csv'),
                checkpoint_dir=os.path.join(root, 'checkpoints'),
                tensorboard_dir=os.path.join(root, 'tb'))
  return runner.run_seeds(atari_suite.ATARI, cr_dqn_agent.PRESETS[0], values,
                          [1], log=log, network_fn=_atari_network)[0]


@pytest.mark.end_to_end
def test_atari_is_the_python_loops_vector_mode_and_resumes(tmp_path, caplog):
  """Tiny Breakout, K = 4. Until learning starts, the rows of the Python
  loop's vector mode (the same emulator seeds, parameters, keys and counts);
  then the updates; extended, it resumes on fresh training streams and
  writes the same files."""
  python = _atari_run(str(tmp_path / 'python'), 'python', 1)
  lines = []
  jitted = _atari_run(str(tmp_path / 'jitted'), 'jitted', 2,
                      log=lambda *a: lines.append(a[0] % a[1:]))
  assert python[1]['train_num_episodes'] == 0 and python[1]['frame'] == 2040
  for got, want in zip(jitted, python):
    for column in results_csv.DETERMINISTIC_COLUMNS:
      if column == 'train_state_value':  # Two compilations of the network.
        np.testing.assert_allclose(got[column], want[column], rtol=1e-3)
      else:
        np.testing.assert_equal(got[column], want[column], err_msg=column)
  assert any(line.startswith('iteration 2/2') and ', updates 7,' in line
             for line in lines), lines
  assert jitted[2]['train_num_episodes'] > 0
  with caplog.at_level(logging.INFO, logger='absl'):
    resumed = _atari_run(str(tmp_path / 'jitted'), 'jitted', 3)
  assert 'fresh training streams' in caplog.text
  assert [r['iteration'] for r in resumed] == [0, 1, 2, 3]
  for got, want in zip(resumed, jitted):  # Iterations 0-2 kept, not rerun.
    for column in results_csv.DETERMINISTIC_COLUMNS:
      np.testing.assert_equal(got[column], want[column], err_msg=column)
  assert resumed[3]['eval_num_frames'] >= 400
  with open(tmp_path / 'jitted' / 'results.csv') as f, open(
      tmp_path / 'python' / 'results.csv') as g:
    assert f.readline() == g.readline()  # The same columns.
  saved = json.loads((tmp_path / 'jitted' / 'run.json').read_text())
  assert (saved['settings']['loop'], saved['settings']['environment_mode']
          ) == ('jitted', 'vector')
  scalars = tb_events.read_scalars(str(tmp_path / 'jitted' / 'tb'))
  assert [step for step, _ in scalars['eval/episode_return']] == [
      0, 2040, 4080, 6120]


@pytest.mark.parametrize('preset_name', ['CR-DQN', 'NC-QR-DQN-0', 'IQN'])
def test_atari_program_traces_for_each_head(preset_name):
  """The Atari suite's network and replay in the jitted program (fc, nc and
  sampled-level heads): shapes only, nothing compiled or run."""
  from zoo.suites import atari_suite  # pylint: disable=g-import-not-at-top
  preset = agent_registry.presets()[preset_name]
  s = settings_lib.resolve_settings(atari_suite.ATARI, preset, dict(
      ATARI_VALUES, loop='jitted', num_envs=2, num_train_frames=2048,
      tau_samples_policy=4,
      tau_samples_s_tm1=4, tau_samples_s_t=4))
  settings_lib.validate_settings(atari_suite.ATARI, s)
  with atari_suite.ATARI.jax_environment(s) as env:
    cfg = jitted_loop.loop_config(s, env.observation_shape)
    replay = atari_suite.ATARI.jax_replay(env)
    parts = build.learner_parts(atari_suite.ATARI, s, env.num_actions)
    functions = jitted_train.make_train(
        cfg, env, replay, parts.network, parts.loss_of_kappa,
        parts.optimizer)
    states = jax.eval_shape(
        functions.init, parts.agent_key,
        jax.tree.map(lambda x: x[0], jitted_loop.phases([1], 2, 1, 'train')),
        jnp.float32(s.huber_param), env.initial_state())
    assert states.replay.frames.shape == (2, 1000, 84, 84)  # 2,000 / K.
    assert states.train_streams.timestep.observation.shape == (2, 84, 84, 4)
    batched = jax.tree.map(
        lambda x: jax.ShapeDtypeStruct((1,) + x.shape, x.dtype), states)
    out, _, loss = jax.eval_shape(
        functools.partial(functions.train_chunk, num_blocks=2), batched,
        jnp.int32(0))
    assert jax.tree.map(lambda x: x.shape, out) == jax.tree.map(
        lambda x: x.shape, batched)
    assert loss.shape == (1,)
    _, streams = jax.eval_shape(
        functions.eval_seed, states.params, states.eval_rng_key,
        jax.tree.map(lambda x: x[0], jitted_loop.phases([1], 2, 0, 'eval')),
        env.initial_state())
    assert streams.tally.frames.shape == ()


def test_atari_refuses_the_reference_environment():
  from zoo.suites import atari_suite  # pylint: disable=g-import-not-at-top
  s = settings_lib.resolve_settings(atari_suite.ATARI, cr_dqn_agent.PRESETS[0],
                                    dict(loop='jitted'))
  assert s.environment_mode == 'vector'  # auto, at K = 1 too.
  s = dataclasses.replace(s, environment_mode='reference')
  with pytest.raises(settings_lib.ConfigError,
                     match='--environment_mode=vector'):
    settings_lib.validate_settings(atari_suite.ATARI, s)
