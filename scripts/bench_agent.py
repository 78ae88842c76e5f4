"""Benchmark each agent training on a real game with learning active.

Prints, per agent: training frames/s (acting + replay + learning every
learn_period frames, as a real run), learner updates/s, the jitted update's
time, action selection time, replay sampling time, and peak resident
memory; beside DeepMind DQN Zoo's QR-DQN on a comparable CPU machine.

  python -m scripts.bench_agent [--environment_name=pong] [--num_frames=4000]
      [--agents=qr_dqn,cr_dqn,nc_cr_dqn,nc_qr_dqn] [--num_envs=1]

The replay is the default 1e6 transitions; numpy allocates it lazily, so the
resident memory only counts the pages filled; the table states the exact
bytes of the full replay beside it.
"""

import resource
import statistics
import time

from absl import app
from absl import flags
import haiku as hk
import jax
import jax.numpy as jnp
import networks
import numpy as np
import optax
import rlax

from zoo import run_atari
from zoo import run_loop

_REFERENCE = {  # DQN Zoo QR-DQN, CPU, learning active (issue text).
    'frames/s': '189-205', 'update ms': '58', 'act ms': '1.2',
    'env ms/frame': '0.6'}


def _median_ms(fn, repeats):
  times = []
  for _ in range(repeats):
    start = time.perf_counter()
    jax.block_until_ready(fn())
    times.append(1e3 * (time.perf_counter() - start))
  return statistics.median(times)


def dqn_zoo_update_ms(batch, num_actions, repeats):
  """Time DQN Zoo's QR-DQN update (rlax.quantile_q_learning), same network."""
  network = hk.transform(networks.atari_quantile_network(num_actions, 201))
  params = network.init(jax.random.PRNGKey(0), batch.s_t[:1])
  optimizer = optax.chain(optax.clip_by_global_norm(10.0),
                          optax.adam(5e-5, eps=0.01 / 32))
  opt_state = optimizer.init(params)
  quantiles = (jnp.arange(201) + 0.5) / 201
  batch_qr = jax.vmap(rlax.quantile_q_learning,
                      in_axes=(0, None, 0, 0, 0, 0, 0, None))

  def loss_fn(online, target, transitions, key):
    _, online_key, target_key = jax.random.split(key, 3)
    dist_tm1 = network.apply(online, online_key, transitions.s_tm1).q_atoms
    dist_t = network.apply(target, target_key, transitions.s_t).q_atoms
    # rlax wants [B, N, A].
    dist_tm1, dist_t = (jnp.swapaxes(d, 1, 2) for d in (dist_tm1, dist_t))
    losses = batch_qr(dist_tm1, quantiles, transitions.a_tm1, transitions.r_t,
                      0.99 * transitions.discount_t, dist_t, dist_t, 1.0)
    return jnp.mean(losses)

  @jax.jit
  def update(key, opt_state, online, target, transitions):
    key, update_key = jax.random.split(key)
    grads = jax.grad(loss_fn)(online, target, transitions, update_key)
    updates, opt_state = optimizer.update(grads, opt_state)
    return key, opt_state, optax.apply_updates(online, updates)

  key = jax.random.PRNGKey(1)
  return _median_ms(lambda: update(key, opt_state, params, params, batch),
                    repeats)


def bench(agent_name, game, num_frames, num_envs, replay_capacity, repeats):
  """Return a dict of measurements for one agent."""
  settings = dict(
      run_atari.default_settings(), environment_name=game,
      replay_capacity=replay_capacity, num_envs=num_envs,
      # Learning from the first 1000 steps on, as in the middle of a run.
      min_replay_capacity_fraction=1000 / replay_capacity,
      results_csv_path='', checkpoint_dir='')
  s = run_atari.resolve_settings(agent_name, settings)
  run_atari.validate_settings(s)
  make_env = run_atari.make_environment_factory(s)
  env = make_env(1, 'train')
  agent, replay = run_atari.build_agent(agent_name, s, env.num_actions)

  # Fill past the minimum, compile, then measure a training phase.
  run_loop.run_phase(env, agent.step, 4 * 1100 * num_envs, 4)
  updates_before = agent.num_updates
  stats = run_loop.run_phase(env, agent.step, num_frames, 4)
  num_updates = agent.num_updates - updates_before

  batch = replay.sample(32, stacks_last=False)  # The learner's layout.
  state = agent.get_state()
  params, target, opt_state = (jax.device_put(state['params']),
                               jax.device_put(state['target_params']),
                               jax.device_put(state['opt_state']))
  key = jax.random.PRNGKey(0)
  update_fn = agent._update  # pylint: disable=protected-access
  select_fn = agent._select_action  # pylint: disable=protected-access

  def one_update():
    nonlocal params, opt_state, key
    params, opt_state, key, loss = update_fn(params, target, opt_state, batch,
                                             key)
    return loss

  update_ms = _median_ms(one_update, repeats)
  observation = replay.sample(num_envs).s_t
  act_ms = _median_ms(lambda: select_fn(params, key, observation, 0.01),
                      repeats * 4)
  sample_ms = _median_ms(lambda: replay.sample(32, stacks_last=False),
                         repeats * 4)
  timestep = env.reset()
  actions = np.zeros(num_envs, np.int32)
  start = time.perf_counter()
  for _ in range(200):
    timestep = env.step(actions)
  env_ms = 1e3 * (time.perf_counter() - start) / (200 * 4 * num_envs)
  env.close()
  measured = {
      'frames/s': f'{stats.frame_rate:.0f}',
      'updates/s': f'{num_updates / stats.duration:.1f}',
      'update ms': f'{update_ms:.1f}',
      'act ms': f'{act_ms:.2f}',
      'sample ms': f'{sample_ms:.2f}',
      'env ms/frame': f'{env_ms:.2f}',
      'peak RSS GB': f'{resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1e6:.2f}',
      'full replay GB': f'{replay.nbytes / 1e9:.2f}',
  }
  return measured, replay.sample(32), env.num_actions


def main(argv):
  del argv
  f = flags.FLAGS
  agents = f.agents.split(',')
  print(f'JAX device: {jax.devices()[0]}; game {f.environment_name}; '
        f'{f.num_frames} measured frames per agent; K={f.num_envs} streams; '
        f'batch 32, N=201.', flush=True)
  results = {}
  for agent_name in agents:
    results[agent_name], batch, num_actions = bench(
        agent_name, f.environment_name, f.num_frames, f.num_envs,
        f.replay_capacity, f.repeats)
    print(f'{agent_name}: {results[agent_name]}', flush=True)
  baseline_ms = dqn_zoo_update_ms(batch, num_actions, f.repeats)
  columns = list(next(iter(results.values())))
  header = '| agent | ' + ' | '.join(columns) + ' |'
  print()
  print(header)
  print('|' + '---|' * (len(columns) + 1))
  for agent_name, row in results.items():
    print(f'| {agent_name} | ' + ' | '.join(row[c] for c in columns) + ' |')
  print('| DQN Zoo QR-DQN (published, CPU) | ' +
        ' | '.join(_REFERENCE.get(c, '') for c in columns) + ' |')
  print('| DQN Zoo QR-DQN update (rlax, measured here, same conditions) | ' +
        ' | '.join(f'{baseline_ms:.1f}' if c == 'update ms' else ''
                   for c in columns) + ' |')


if __name__ == '__main__':
  flags.DEFINE_string('agents', 'qr_dqn,cr_dqn,nc_cr_dqn,nc_qr_dqn',
                      'Comma-separated agents.')
  flags.DEFINE_integer('num_frames', 4000, 'Measured training frames.')
  flags.DEFINE_integer('repeats', 20, 'Repeats of each timed call (median).')
  app.run(main)
