"""Tests for zoo.agent: pure functions, schedules, and that every agent learns."""

import dataclasses
import functools
import math

import haiku as hk
import jax
import jax.numpy as jnp
import numpy as np
import optax
import pytest

import losses
import networks
from tests import catch
from zoo.agent import learning as agent_lib
from zoo.agent import quantile_agent
from zoo.configuration import agent_registry
from zoo.loops import build
from zoo.environments import environment
from zoo.replay import frame_replay as replay_lib
from zoo.suites import atari_suite
from zoo.loops import driver
from zoo.loops import python_loop
from zoo.configuration import settings as settings_lib


def _table_network(num_states, num_actions, num_quantiles):
  """Tabular 'network': observations are state ids, atoms a parameter."""

  def net_fn(observations):
    table = hk.get_parameter(
        'atoms', (num_states, num_actions, num_quantiles),
        init=hk.initializers.RandomNormal())
    q_atoms = table[observations]
    return networks.QuantileNetworkOutputs(q_atoms, jnp.mean(q_atoms, -1))

  return hk.transform(net_fn)


def test_select_action_is_greedy_at_zero_and_uniform_at_one():
  network = _table_network(4, 3, 5)
  params = network.init(jax.random.PRNGKey(0), jnp.zeros(1, jnp.int32))
  observations = jnp.array([0, 1, 2, 3])
  q_values = network.apply(params, None, observations).q_values
  key = jax.random.PRNGKey(1)
  select = jax.jit(functools.partial(agent_lib.select_action, network))
  key2, actions, values = select(params, key, observations, 0.0)
  np.testing.assert_array_equal(actions, jnp.argmax(q_values, -1))
  np.testing.assert_allclose(values, jnp.max(q_values, -1))
  assert not np.array_equal(key, key2)
  counts = np.zeros(3)
  for _ in range(200):
    key, actions, _ = select(params, key, observations, 1.0)
    counts += np.bincount(np.asarray(actions), minlength=3)
  assert counts.min() > 0.25 * counts.sum() / 3 * 2  # Roughly uniform.


def test_multiquadric_loss_fn_takes_its_width_relative_to_the_source_spread():
  rng = np.random.default_rng(4)
  source, target = rng.normal(size=(2, 7)), rng.normal(size=(2, 7))
  # Jitted: op by op, each operation of the losses compiles apart.
  loss_fn = jax.jit(agent_lib.make_loss_fn('multiquadric_cramer',
                                           smoothing_width=0.5))
  spread = np.mean(np.abs(source[:, :, None] - source[:, None, :]), (1, 2))
  np.testing.assert_allclose(
      loss_fn(source, target),
      jax.jit(losses.multiquadric_cramer_loss)(source, target, 0.5 * spread),
      rtol=1e-5)
  # Scale-free: scaling the atoms scales the loss, not what it smooths.
  np.testing.assert_allclose(loss_fn(10 * source, 10 * target),
                             10 * loss_fn(source, target), rtol=1e-4)
  # The width is not a path for the gradient: as if h were a constant.
  fixed = lambda s: jnp.sum(losses.multiquadric_cramer_loss(
      s, target, 0.5 * jnp.asarray(spread, s.dtype)))
  np.testing.assert_allclose(
      jax.jit(jax.grad(lambda s: jnp.sum(loss_fn(s, target))))(
          jnp.asarray(source)),
      jax.jit(jax.grad(fixed))(jnp.asarray(source)), rtol=1e-4, atol=1e-7)
  assert agent_registry.default_optimizer_epsilon(
      'multiquadric_cramer', 200, False) == agent_registry.default_optimizer_epsilon(
          'cramer', 200, False)


def test_make_loss_fn_calls_the_declared_loss_with_its_hyperparameters():
  rng = np.random.default_rng(5)
  source, target = rng.normal(size=(2, 6)), rng.normal(size=(2, 6))
  assert agent_lib.make_loss_fn('cramer', 0.5) is losses.cramer_loss
  for kappa in (0.0, 0.5):
    np.testing.assert_allclose(
        agent_lib.make_loss_fn('qr', kappa, smoothing_width=0.0)(
            source, target),
        losses.quantile_regression_loss(source, target, huber_param=kappa))
  np.testing.assert_allclose(  # κ unset: QR's declared default, 1.
      agent_lib.make_loss_fn('qr')(source, target),
      losses.quantile_regression_loss(source, target, huber_param=1.0))
  with pytest.raises(ValueError, match="loss 'iqn' is not one of"):
    agent_lib.make_loss_fn('iqn')
  # What zoo.loops.build passes besides κ (the jitted loop's data).
  s = settings_lib.resolve_settings(
      atari_suite.ATARI, agent_registry.presets()['CR-DQN-MQ'], {})
  assert agent_lib.loss_settings(s) == {'smoothing_width': 0.003}


@pytest.mark.parametrize('loss', ['qr', 'cramer', 'multiquadric_cramer'])
def test_td_loss_uses_target_network_greedy_atoms(loss):
  num_quantiles = 4
  network = _table_network(3, 2, num_quantiles)
  params = network.init(jax.random.PRNGKey(0), jnp.zeros(1, jnp.int32))
  target_params = network.init(jax.random.PRNGKey(7), jnp.zeros(1, jnp.int32))
  transitions = replay_lib.Transitions(
      s_tm1=jnp.array([0, 1, 2]), a_tm1=jnp.array([1, 0, 1]),
      r_t=jnp.array([0.5, -1.0, 0.0]), discount_t=jnp.array([1.0, 0.0, 1.0]),
      s_t=jnp.array([1, 2, 0]))
  loss_fn = agent_lib.make_loss_fn(loss, huber_param=1.0, smoothing_width=0.1)
  # Jitted: op by op, each operation of the loss compiles apart.
  td_loss = jax.jit(functools.partial(agent_lib.td_loss, network, loss_fn, 0.9))
  got = td_loss(params, target_params, transitions, jax.random.PRNGKey(3))
  online = np.asarray(params['~']['atoms'])
  target = np.asarray(target_params['~']['atoms'])
  expected = []
  per_row_loss = jax.jit(loss_fn)
  for i in range(3):
    s, a, r, d, s2 = (int(transitions.s_tm1[i]), int(transitions.a_tm1[i]),
                      float(transitions.r_t[i]),
                      float(transitions.discount_t[i]), int(transitions.s_t[i]))
    a_star = np.argmax(target[s2].mean(-1))  # Target net's own greedy action.
    target_atoms = r + 0.9 * d * target[s2, a_star]
    expected.append(per_row_loss(online[s, a], target_atoms))
  np.testing.assert_allclose(got, np.mean(expected), rtol=1e-5)
  # The target is under stop_gradient: no gradient reaches target params.
  target_grads = jax.jit(jax.grad(td_loss, argnums=1))(
      params, target_params, transitions, jax.random.PRNGKey(3))
  assert float(jnp.abs(target_grads['~']['atoms']).max()) == 0.0


def _iqn_network(num_actions=3, counts=(5, 7, 6)):
  """A small IQN network on [B, 1, 4, 4, 1] stacks-first observations."""
  raw = hk.transform(networks.iqn_network(
      networks.mlp_torso([16]), num_actions, num_cosines=8,
      hidden_sizes=(16,)))
  return raw, agent_lib.at_sampled_levels(raw, agent_lib.LevelCounts(*counts))


@pytest.mark.parametrize('loss', ['sampled_qr', 'sampled_cramer'])
def test_iqn_td_loss_is_dqn_zoos(loss):
  """td_loss at sampled levels = DQN Zoo's IQN loss, built from rlax."""
  rlax = pytest.importorskip('rlax')
  raw, network = _iqn_network()
  rng = np.random.default_rng(4)
  batch = 6
  transitions = replay_lib.Transitions(
      s_tm1=rng.integers(0, 255, (batch, 4, 4, 1)).astype(np.uint8),
      a_tm1=rng.integers(0, 3, batch).astype(np.int32),
      r_t=rng.normal(size=batch).astype(np.float32),
      discount_t=np.array([1, 0, 1, 1, 1, 0], np.float32),
      s_t=rng.integers(0, 255, (batch, 4, 4, 1)).astype(np.uint8))
  init = jax.jit(network.init)  # Op by op, Haiku's init compiles each op.
  params = init(jax.random.PRNGKey(0), transitions.s_tm1)
  target_params = init(jax.random.PRNGKey(1), transitions.s_tm1)
  loss_fn = agent_lib.make_loss_fn(loss, huber_param=1.0)
  key = jax.random.PRNGKey(2)
  # Both sides jitted: op by op, each operation compiles apart.
  got = jax.jit(functools.partial(agent_lib.td_loss, network, loss_fn, 0.9))(
      params, target_params, transitions, key)
  # The levels each use draws: td_loss's keys, then td_target's.
  online_key, target_key = jax.random.split(key)
  selector_key, values_key = jax.random.split(target_key)
  tau_tm1 = jax.random.uniform(online_key, (batch, 7))
  tau_selector = jax.random.uniform(selector_key, (batch, 5))
  tau_t = jax.random.uniform(values_key, (batch, 6))
  # DQN Zoo's layout [B, N, A]; the greedy action from the target network.
  dist = lambda p, s, tau: jnp.swapaxes(raw.apply(p, None, s, tau).q_atoms,
                                        1, 2)

  @jax.jit
  def dqn_zoo_loss(params, target_params, transitions):
    dist_q_tm1 = dist(params, transitions.s_tm1, tau_tm1)
    dist_selector = dist(target_params, transitions.s_t, tau_selector)
    dist_q_t = dist(target_params, transitions.s_t, tau_t)
    if loss == 'sampled_qr':
      return jax.vmap(rlax.quantile_q_learning,
                      in_axes=(0, 0, 0, 0, 0, 0, 0, None))(
          dist_q_tm1, tau_tm1, transitions.a_tm1, transitions.r_t,
          0.9 * transitions.discount_t, dist_selector, dist_q_t, 1.0)
    a_star = jnp.argmax(jnp.mean(dist_selector, axis=1), axis=-1)
    rows = jnp.arange(batch)
    target = (transitions.r_t[:, None] + 0.9 * transitions.discount_t[:, None]
              * dist_q_t[rows, :, a_star])
    return losses.sampled_cramer_loss(
        dist_q_tm1[rows, :, transitions.a_tm1], target)

  expected = dqn_zoo_loss(params, target_params, transitions)
  np.testing.assert_allclose(got, jnp.mean(expected), rtol=1e-5, atol=1e-6)


def test_acting_at_sampled_levels_is_greedy_on_the_policy_levels_mean():
  raw, network = _iqn_network()
  observations = np.random.default_rng(5).integers(
      0, 255, (4, 4, 4, 1)).astype(np.uint8)
  params = jax.jit(network.init)(jax.random.PRNGKey(0), observations)
  key = jax.random.PRNGKey(3)
  _, actions, values = jax.jit(functools.partial(
      agent_lib.select_action, network))(params, key, observations, 0.0)
  apply_key = jax.random.split(key, 4)[1]  # select_action's second key.
  q_values = jax.jit(raw.apply)(params, None, observations, jax.random.uniform(
      apply_key, (4, 5))).q_values  # The policy's 5 levels per state.
  np.testing.assert_array_equal(actions, jnp.argmax(q_values, -1))
  np.testing.assert_allclose(values, jnp.max(q_values, -1), rtol=1e-6)


def test_update_scales_gradient_and_returns_key():
  network = _table_network(3, 2, 4)
  params = network.init(jax.random.PRNGKey(0), jnp.zeros(1, jnp.int32))
  transitions = replay_lib.Transitions(
      s_tm1=jnp.array([0, 1]), a_tm1=jnp.array([1, 0]),
      r_t=jnp.array([0.5, -1.0]), discount_t=jnp.array([1.0, 0.0]),
      s_t=jnp.array([1, 2]))
  sgd = optax.sgd(1.0)
  deltas = []
  # Jitted: op by op, each operation compiles apart (one program a scale).
  update = jax.jit(functools.partial(
      agent_lib.update, network, sgd, losses.quantile_regression_loss, 0.99),
                   static_argnums=0)
  for scale in (1.0, 0.25):
    p = jax.tree.map(jnp.copy, params)
    new, _, key, loss = update(scale, p, params, sgd.init(p), transitions,
                               jax.random.PRNGKey(1))
    deltas.append(new['~']['atoms'] - params['~']['atoms'])
    assert key.shape == (2,) and np.isfinite(loss)
  np.testing.assert_allclose(deltas[1], 0.25 * deltas[0], atol=1e-7)


def _mlp_network(num_actions=3, num_quantiles=5):
  return hk.transform(networks.quantile_network(
      networks.mlp_torso([16]),
      networks.fc_quantile_head(num_actions, num_quantiles, 1, 16)))


@pytest.mark.parametrize('sampled_levels', [False, True])
def test_fused_updates_equal_sequential_updates(sampled_levels):
  """U updates in one dispatch = U dispatches on the same batches."""
  num_updates, batch = 3, 8
  network = _iqn_network()[1] if sampled_levels else _mlp_network()
  rng = np.random.default_rng(0)
  observations = rng.integers(0, 255, (num_updates, batch, 1, 4, 4, 1))
  transitions = replay_lib.Transitions(
      s_tm1=observations.astype(np.uint8),
      a_tm1=rng.integers(0, 3, (num_updates, batch)).astype(np.int32),
      r_t=rng.normal(size=(num_updates, batch)).astype(np.float32),
      discount_t=np.ones((num_updates, batch), np.float32),
      s_t=np.roll(observations, 1, axis=1).astype(np.uint8))
  stacks_first = quantile_agent._on_stacks_first(network)
  init = jax.jit(stacks_first.init)  # Op by op, each op compiles apart.
  params = init(jax.random.PRNGKey(0), transitions.s_tm1[0])
  target_params = init(jax.random.PRNGKey(1), transitions.s_tm1[0])
  optimizer = agent_lib.make_optimizer(1e-3, 1e-4, 10.0)
  loss_fn = (agent_lib.sampled_cramer_loss if sampled_levels
             else losses.cramer_loss)
  update_fn = functools.partial(agent_lib.update, stacks_first, optimizer,
                                loss_fn, 0.99, 1.0)
  target_fn = functools.partial(agent_lib.td_target, stacks_first, 0.99)
  key = jax.random.PRNGKey(2)
  single = jax.jit(update_fn)
  p, o, k = params, optimizer.init(params), key
  sequential_losses = []
  for u in range(num_updates):
    batch_u = jax.tree.map(lambda x, u=u: x[u], transitions)
    p, o, k, loss = single(p, target_params, o, batch_u, k)
    sequential_losses.append(loss)
  fused = jax.jit(functools.partial(agent_lib.fused_update, update_fn,
                                    target_fn,
                                    sampled_levels=sampled_levels))(
      params, target_params, optimizer.init(params), transitions, key)
  np.testing.assert_array_equal(fused[2], k)  # The same keys, in turn.
  for got, want in zip(jax.tree.leaves((fused[0], fused[1])),
                       jax.tree.leaves((p, o))):
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-7)
  np.testing.assert_allclose(fused[3], sequential_losses, rtol=1e-5)
  assert not np.allclose(jax.tree.leaves(p)[0], jax.tree.leaves(params)[0])


def test_default_optimizer_epsilon_follows_spec_table():
  base = 0.01 / 32
  assert agent_registry.default_optimizer_epsilon('qr', 201, False) == base
  for loss, scale in (('cramer', False), ('qr', True)):
    assert math.isclose(agent_registry.default_optimizer_epsilon(loss, 201, scale),
                        base * 2 / 201)
  assert math.isclose(base * 2 / 201, 3.11e-6, rel_tol=1e-3)


def test_linear_schedule_in_frames():
  # DQN Zoo defaults: begins at 0.05 * 1e6 * 4 frames, lasts 0.02 * 200 * 1e6.
  schedule = agent_lib.LinearSchedule(1.0, 0.01, 200_000, 4_000_000)
  assert schedule(0) == 1.0 and schedule(200_000) == 1.0
  assert math.isclose(schedule(2_200_000), 0.505)
  assert math.isclose(schedule(10**8), 0.01)
  # The jitted loop's traced value is the same function's.
  traced = jax.jit(lambda t: schedule.at(t, xp=jnp))
  for t in (0, 200_000, 2_200_000, 10**8):
    assert math.isclose(float(traced(t)), schedule(t), rel_tol=1e-6)


class _ConstantEnv(environment.BatchedEnvironment):
  num_actions = 2

  def __init__(self, num_envs):
    self.num_envs = num_envs

  def reset(self):
    return self.step(None)

  def step(self, actions):
    k = self.num_envs
    return environment.BatchedTimeStep(
        np.ones(k, np.int8), np.full(k, 5.0, np.float32),
        np.ones(k, np.float32), np.zeros((k, 5, 5, 1), np.uint8))


def _settings(agent_name, **overrides):
  settings = dict(
      settings_lib.default_settings(atari_suite.ATARI), environment_name='pong',
      replay_capacity=2000, min_replay_capacity_fraction=0.05, batch_size=32,
      num_action_repeats=1, num_stacked_frames=1,
      exploration_epsilon_decay_frame_fraction=0.5,
      exploration_epsilon_end_value=0.05, eval_exploration_epsilon=0.0,
      target_network_update_period=200, learning_rate=3e-3,
      additional_discount=0.9, num_iterations=3, num_train_frames=1000,
      num_eval_frames=200, learn_period=2, num_quantiles=11, seed=0,
      results_csv_path='', checkpoint_dir='')
  settings.update(overrides)
  return settings_lib.resolve_settings(
      atari_suite.ATARI, agent_registry.default_preset(agent_name), settings)


def _catch_agent(settings):
  network_fn = networks.iqn_network(
      networks.mlp_torso([64]), 3, hidden_sizes=(64,)) if (
          settings.head == 'iqn') else networks.quantile_network(
      networks.mlp_torso([64]),
      (networks.fc_quantile_head if settings.head == 'fc' else
       functools.partial(networks.nc_quantile_head,
                         scale_activation=settings.nc_scale_activation))(
                             3, settings.num_quantiles, 1, 64))
  settings = dataclasses.replace(settings, environment_height=5,
                                 environment_width=5)
  return build.build_agent(atari_suite.ATARI, settings, 3,
                                network_fn=network_fn)


def test_learning_and_target_update_periods_are_in_frames():
  s = _settings('cr_dqn', num_action_repeats=4, num_envs=2, learn_period=16,
                replay_capacity=400, min_replay_capacity_fraction=0.1,
                target_network_update_period=80)
  agent, replay = _catch_agent(s)
  env = _ConstantEnv(2)
  timestep = env.reset()
  for _ in range(19):  # 38 steps held < the minimum of 40: no learning yet.
    agent.step(timestep)
  assert agent.num_updates == 0 and agent.frame_t == 19 * 8
  target_before = agent.get_state()['target_params']
  # Frames 152 -> 320: updates at 160, 176, ..., 320 (11), target copies
  # at 160, 240 and 320 (after that step's update).
  for _ in range(21):
    agent.step(timestep)
  assert agent.num_updates == 11
  state = agent.get_state()
  np.testing.assert_array_equal(
      jax.tree.leaves(state['target_params'])[0],
      jax.tree.leaves(state['params'])[0])
  assert not np.array_equal(jax.tree.leaves(target_before)[0],
                            jax.tree.leaves(state['params'])[0])
  # Rewards are clipped before they are stored.
  assert replay.sample(8).r_t.max() == 1.0


def _run_catch(agent_name, **overrides):
  s = _settings(agent_name, **overrides)
  agent, replay = _catch_agent(s)
  make = lambda it, phase: catch.CatchBatchedEnvironment(
      s.num_envs, build.environment_seed(0, it, phase))
  return driver.run(
      [s], lambda: python_loop.PythonLoop(s, agent, replay, make),
      environment_name='catch', normalize=lambda x: float('nan'))[0]


@pytest.mark.parametrize('agent_name,overrides', [
    ('qr_dqn', {}),
    ('qr_dqn', {'huber_param': 0.0}),
    ('cr_dqn', {}),
    ('cr_dqn', {'loss': 'multiquadric_cramer', 'smoothing_width': 0.003}),
    ('cr_dqn', {'num_envs': 8}),  # Vectorized: same frames, same result.
    ('cr_dqn', {'num_envs': 2, 'num_fused_updates': 4,
                'replay_on_device': True}),
    ('cr_dqn', {'num_envs': 2, 'overlap_learning': True}),  # One block behind.
    ('nc_cr_dqn', {'num_envs': 2}),
    ('nc_qr_dqn', {}),
    ('nc_qr_dqn', {'huber_param': 0.0, 'scale_grad': True, 'num_envs': 2}),
    ('iqn', {'tau_samples_policy': 8, 'tau_samples_s_tm1': 8,
             'tau_samples_s_t': 8}),
    ('iqn', {'loss': 'sampled_cramer', 'tau_samples_policy': 8,
             'tau_samples_s_tm1': 8, 'tau_samples_s_t': 8, 'num_envs': 2,
             'num_fused_updates': 2}),
])
def test_every_agent_learns_catch(agent_name, overrides):
  # 800 training frames an iteration (ε decays over half of the 2400): every
  # case here (seed 0) already catches every ball at iteration 2 (at 700 the
  # sampled Cramér IQN does not yet), so the check at iteration 3 keeps a
  # whole iteration of margin, as 1000 frames did.
  rows = _run_catch(agent_name, num_train_frames=800, **overrides)
  assert [r['iteration'] for r in rows] == [0, 1, 2, 3]
  final = rows[-1]
  # 200 greedy eval steps = 40 episodes of 5 steps, every ball caught.
  assert final['eval_num_episodes'] == 40
  assert final['eval_episode_return'] == 1.0
  assert np.isfinite(final['train_state_value'])


def test_cramer_policy_evaluation_converges_to_quantile_midpoints():
  """Chain s0 -> s1 -> end with stochastic rewards; one action."""
  gamma, num_quantiles = 0.9, 8
  network = _table_network(3, 1, num_quantiles)
  params = network.init(jax.random.PRNGKey(0), jnp.zeros(1, jnp.int32))
  optimizer = optax.adam(0.02)
  opt_state = optimizer.init(params)
  update = jax.jit(functools.partial(
      agent_lib.update, network, optimizer, losses.cramer_loss, gamma, 1.0))
  rng = np.random.default_rng(0)
  key = jax.random.PRNGKey(0)
  batch = 64
  for step in range(3000):
    s = rng.integers(0, 2, size=batch)
    r = np.where(s == 0, rng.choice([0.0, 1.0], size=batch),
                 rng.choice([-1.0, 2.0], p=[0.3, 0.7], size=batch))
    transitions = replay_lib.Transitions(
        s_tm1=s, a_tm1=np.zeros(batch, np.int32), r_t=r.astype(np.float32),
        discount_t=(s == 0).astype(np.float32), s_t=s + 1)
    target = params if step % 10 == 0 else target
    params, opt_state, key, _ = update(params, target, opt_state, transitions,
                                       key)
  learned = np.asarray(network.apply(params, None, jnp.array([0, 1])).q_atoms)
  # Exact returns: s1: -1 (0.3), 2 (0.7); s0: r0 + 0.9 r1, r0 in {0, 1}.
  values0 = np.array([-0.9, 0.1, 1.8, 2.8])
  cdf0 = np.cumsum([0.15, 0.15, 0.35, 0.35])
  tau = (np.arange(num_quantiles) + 0.5) / num_quantiles
  midpoints0 = values0[np.searchsorted(cdf0, tau)]
  midpoints1 = np.where(tau < 0.3, -1.0, 2.0)
  d1_0 = np.mean(np.abs(np.sort(learned[0, 0]) - midpoints0))
  d1_1 = np.mean(np.abs(np.sort(learned[1, 0]) - midpoints1))
  assert d1_1 < 0.05, (learned[1, 0], midpoints1)
  assert d1_0 < 0.1, (learned[0, 0], midpoints0)


class _TaggedStreamsEnv(environment.BatchedEnvironment):
  """K streams whose one-frame observations encode (stream, step in stream).

  Pixel [0, 0] is the stream id + 1, pixel [0, 1] the stream's step count
  (mod 256) and pixel [0, 2] is 1 on FIRST; stream k's episodes last k + 2
  steps, so the streams' episode boundaries never line up.
  """

  num_actions = 3

  def __init__(self, num_envs):
    self.num_envs = num_envs
    self.count = np.zeros(num_envs, int)
    self._episode_step = np.zeros(num_envs, int)

  def _timestep(self, step_type):
    k = self.num_envs
    obs = np.zeros((k, 5, 5, 1), np.uint8)
    obs[:, 0, 0, 0] = np.arange(k) + 1
    obs[:, 0, 1, 0] = self.count % 256
    obs[:, 0, 2, 0] = step_type == environment.FIRST
    reward = np.where(step_type == environment.FIRST, 0.0, 0.5)
    discount = np.where(step_type == environment.LAST, 0.0, 1.0)
    return environment.BatchedTimeStep(step_type.astype(np.int8),
                                       reward.astype(np.float32),
                                       discount.astype(np.float32), obs)

  def reset(self):
    self._episode_step[:] = 0
    return self._timestep(np.full(self.num_envs, environment.FIRST))

  def step(self, actions):
    del actions
    self.count += 1
    length = np.arange(self.num_envs) + 2
    restart = self._episode_step == length
    self._episode_step = np.where(restart, 0, self._episode_step + 1)
    step_type = np.where(
        restart, environment.FIRST,
        np.where(self._episode_step == length, environment.LAST,
                 environment.MID))
    return self._timestep(step_type)


@pytest.mark.parametrize('k,num_fused_updates,replay_on_device', [
    (4, 1, False), (4, 4, False), (4, 3, True), (1, 3, False)])
def test_vectorized_streams_map_onto_the_dqn_zoo_protocol(
    k, num_fused_updates, replay_on_device, monkeypatch):
  """K streams = K DQN Zoo actors sharing one agent, counted in total frames.

  One batched action selection per vector step; every stream's step is in
  the replay, transitions never cross streams or episode starts; ε, the
  learn period and the target period run on frames summed over streams.
  With U fused updates (host or device replay) the updates due and the
  target copies fall on the same frames as with U = 1.
  """
  s = _settings('cr_dqn', num_action_repeats=4, num_envs=k, learn_period=16,
                replay_capacity=800, min_replay_capacity_fraction=0.1,
                target_network_update_period=160,
                exploration_epsilon_decay_frame_fraction=0.5,
                num_fused_updates=num_fused_updates,
                replay_on_device=replay_on_device)
  agent, replay = _catch_agent(s)
  assert agent._on_device == replay_on_device
  copies = []  # (frame, updates run) at each target copy.
  copy = quantile_agent._copy

  def recording_copy(params):
    copies.append((agent.frame_t, agent.num_updates,
                   agent.num_pending_updates))
    return copy(params)

  monkeypatch.setattr(quantile_agent, '_copy', recording_copy)
  calls = []
  select = agent._select_action

  def counting_select(params, key, observations, epsilon):
    calls.append((observations.shape[0], epsilon))
    return select(params, key, observations, epsilon)

  agent._select_action = counting_select
  env = _TaggedStreamsEnv(k)
  actions_taken = {}  # (stream, count) -> action
  timestep = env.reset()
  num_steps = 60 * 4 // k
  for _ in range(num_steps):
    actions = agent.step(timestep)
    for stream in range(k):
      actions_taken[(stream, int(env.count[stream]))] = int(actions[stream])
    timestep = env.step(actions)

  frames = num_steps * 4 * k
  assert agent.frame_t == frames
  assert [n for n, _ in calls] == [k] * num_steps  # One batched call a step.
  # ε is the schedule at the total frames seen before each step.
  schedule = agent_lib.LinearSchedule(1.0, 0.05, 80 * 4, 3 * 1000 // 2)
  for step, (_, epsilon) in enumerate(calls):
    assert math.isclose(epsilon, schedule(step * 4 * k), abs_tol=1e-6)
  # Learning starts once 80 transitions are held (frames 304 -> 320 at K=4,
  # 316 -> 320 at K=1), then one update per 16 total frames: 41 in all.
  assert frames // 16 - 304 // 16 == 41
  assert agent.num_updates + agent.num_pending_updates == 41
  assert agent.num_pending_updates < num_fused_updates
  # Target copies every 160 frames once learning runs, each after every
  # update due so far (updates due at frame f: (f - 304) // 16).
  assert copies == [(f, (f - 304) // 16, 0) for f in (320, 480, 640, 800, 960)]
  assert replay.size == num_steps * k

  batch = replay.sample(64)
  stream_tm1 = batch.s_tm1[:, 0, 0, 0].astype(int) - 1
  stream_t = batch.s_t[:, 0, 0, 0].astype(int) - 1
  np.testing.assert_array_equal(stream_tm1, stream_t)  # Never across streams.
  count_tm1 = batch.s_tm1[:, 0, 1, 0].astype(int)
  np.testing.assert_array_equal(batch.s_t[:, 0, 1, 0], count_tm1 + 1)
  assert not batch.s_t[:, 0, 2, 0].any()  # Never into an episode start.
  for stream, count, action in zip(stream_tm1, count_tm1, batch.a_tm1):
    assert actions_taken[(stream, count)] == action
  np.testing.assert_array_equal(batch.r_t, 0.5)


def test_state_round_trip_keeps_pending_updates_and_the_device_replay():
  """Saving mid-run (pending fused updates) and restoring continues exactly."""
  # The protocol test's settings at K = 4, U = 3 (its compiled programs).
  s = _settings('cr_dqn', num_action_repeats=4, num_envs=4, learn_period=16,
                replay_capacity=800, min_replay_capacity_fraction=0.1,
                target_network_update_period=160, num_fused_updates=3,
                replay_on_device=True)
  env = _TaggedStreamsEnv(4)
  agent, replay = _catch_agent(s)
  timestep = env.reset()
  for _ in range(25):  # Frames 0 -> 400: 6 updates due from frame 320.
    timestep = env.step(agent.step(timestep))
  # One ran before the target copy at 320, three fused at 368.
  assert agent.num_pending_updates == 2
  restored, restored_replay = _catch_agent(dataclasses.replace(s, seed=5))
  restored.set_state(agent.get_state())
  restored_replay.set_state(replay.get_state())
  for first, arrays in replay.steps(0, replay.num_steps):  # All held.
    restored_replay.put_steps(first, arrays)
  assert restored.num_pending_updates == agent.num_pending_updates
  for _ in range(15):
    actions = agent.step(timestep)
    np.testing.assert_array_equal(restored.step(timestep), actions)
    timestep = env.step(actions)
  assert restored.num_updates == agent.num_updates > 0
  for got, want in zip(jax.tree.leaves(restored.get_state()),
                       jax.tree.leaves(agent.get_state())):
    np.testing.assert_array_equal(got, want)
