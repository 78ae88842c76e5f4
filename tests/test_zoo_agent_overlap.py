"""The agent's order of acting and learning, with and without overlap_learning.

Without it, the parameters after a fixed Catch run are the ones the agent
computed before the option existed; with it, acting uses the snapshot of the
parameters from before the latest block of updates dispatched, and updates
and target copies fall on the same frames as without it.
"""

import dataclasses

import jax
import numpy as np
import pytest

from tests import catch
from tests.test_zoo_agent import _TaggedStreamsEnv, _catch_agent, _settings
from zoo.agent import quantile_agent

# Per parameter leaf, sum |x| after 60 steps of 4 Catch streams (41 updates),
# recorded from the agent before overlap_learning was added (CPU, float32;
# the default learner: U = 1, host replay).
_PARAMS_BEFORE_OVERLAP = {
    (1, False): [4.873043787007191, 285.3317929045229, 2.632981694303453,
                 148.77763611756382, 6.579567066160962, 164.43737810425228],
}


def _protocol_settings(**overrides):
  return _settings('cr_dqn', num_action_repeats=4, num_envs=4, learn_period=16,
                   replay_capacity=800, min_replay_capacity_fraction=0.1,
                   target_network_update_period=160, **overrides)


def _leaves(tree):
  return [np.asarray(x) for x in jax.tree.leaves(jax.device_get(tree))]


@pytest.mark.parametrize('num_fused_updates,replay_on_device',
                         list(_PARAMS_BEFORE_OVERLAP))
def test_without_overlap_the_parameters_are_unchanged(num_fused_updates,
                                                      replay_on_device):
  agent, _ = _catch_agent(_protocol_settings(
      num_fused_updates=num_fused_updates, replay_on_device=replay_on_device))
  env = catch.CatchBatchedEnvironment(4, seed=3)
  timestep = env.reset()
  for _ in range(60):
    # Zero staleness: every step acts with the learner's latest parameters.
    assert agent.acting_params is agent.online_params
    timestep = env.step(agent.step(timestep))
  assert agent.num_updates == 41
  sums = [float(np.abs(x).astype(np.float64).sum())
          for x in _leaves(agent.get_state()['params'])]
  np.testing.assert_allclose(
      sums, _PARAMS_BEFORE_OVERLAP[(num_fused_updates, replay_on_device)],
      rtol=1e-4)


def _run_recorded(agent, env, num_steps, copies, monkeypatch):
  """Step `agent`; return per step (acting params, params before dispatch)."""
  copy = quantile_agent._copy

  def recording_copy(params):
    copies.append((agent.frame_t, agent.num_updates,
                   agent.num_pending_updates))
    return copy(params)

  monkeypatch.setattr(quantile_agent, '_copy', recording_copy)
  acted, before_block = [], []
  select, learn = agent._select_action, agent.learn

  def recording_select(params, *args):
    acted.append(_leaves(params))
    return select(params, *args)

  def recording_learn(*args):
    if len(before_block) < len(acted):  # The step's first dispatch.
      before_block.append(_leaves(agent.online_params))
    return learn(*args)

  agent._select_action, agent.learn = recording_select, recording_learn
  timestep = env.reset()
  for _ in range(num_steps):
    timestep = env.step(agent.step(timestep))
    if len(before_block) < len(acted):
      before_block.append(None)  # This step dispatched nothing.
  agent._select_action, agent.learn = select, learn
  monkeypatch.setattr(quantile_agent, '_copy', copy)
  return acted, before_block


@pytest.mark.parametrize('num_fused_updates,replay_on_device', [
    (1, False), (3, True)])
def test_overlap_acts_on_the_parameters_before_the_latest_block(
    num_fused_updates, replay_on_device, monkeypatch):
  """Acting lags by one block; updates and target copies are unchanged.

  K = 4: one update due per step. With U = 1 every step from the minimum on
  dispatches a block; with U = 3 every third step does, and the steps whose
  target copy flushes the pending updates dispatch one too.
  """
  s = _protocol_settings(num_fused_updates=num_fused_updates,
                         replay_on_device=replay_on_device)
  num_steps = 60
  serial_copies, overlap_copies = [], []
  serial, _ = _catch_agent(s)
  _run_recorded(serial, _TaggedStreamsEnv(4), num_steps, serial_copies,
                monkeypatch)
  overlap_settings = dataclasses.replace(s, overlap_learning=True)
  agent, replay = _catch_agent(overlap_settings)
  initial = _leaves(agent.online_params)
  acted, before_block = _run_recorded(agent, _TaggedStreamsEnv(4), num_steps,
                                      overlap_copies, monkeypatch)

  latest = initial  # The snapshot of the latest step that dispatched.
  blocks = 0
  for step in range(num_steps):
    for got, want in zip(acted[step], latest):
      np.testing.assert_array_equal(got, want, err_msg=f'step {step}')
    if before_block[step] is not None:
      latest, blocks = before_block[step], blocks + 1
  assert blocks == (41 if num_fused_updates == 1 else 17)
  # The last block's updates are in the learner, not in the acting params.
  assert not np.array_equal(_leaves(agent.online_params)[1],
                            _leaves(agent.acting_params)[1])
  # Same updates and target copies, at the same frames, as the serial order.
  assert (agent.num_updates, agent.num_pending_updates) == (
      serial.num_updates, serial.num_pending_updates)
  assert overlap_copies == serial_copies
  assert len(serial_copies) == 5

  # The snapshot and its key are part of the state: a restore goes on exactly.
  restored, restored_replay = _catch_agent(
      dataclasses.replace(overlap_settings, seed=5))
  restored.set_state(agent.get_state())
  restored_replay.set_state(replay.get_state())
  for first, arrays in replay.steps(0, replay.num_steps):
    restored_replay.put_steps(first, arrays)
  env = _TaggedStreamsEnv(4)
  timestep = env.reset()
  for _ in range(8):
    actions = agent.step(timestep)
    np.testing.assert_array_equal(restored.step(timestep), actions)
    timestep = env.step(actions)
  for got, want in zip(_leaves(restored.get_state()),
                       _leaves(agent.get_state())):
    np.testing.assert_array_equal(got, want)
