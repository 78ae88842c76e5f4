"""Build a run's parts from its settings: environments, agent and replay."""

from typing import Callable, Tuple

import haiku as hk
import jax
import numpy as np

from zoo import agent as agent_lib
from zoo import device_replay
from zoo import environment
from zoo import replay as replay_lib
from zoo import run_loop
from zoo import settings as settings_lib


def make_environment_factory(suite, s: settings_lib.Settings
                             ) -> Callable[[int, str],
                                           environment.BatchedEnvironment]:
  """Return fn(iteration, phase) -> a fresh, deterministically seeded env."""

  def make(iteration: int, phase: str) -> environment.BatchedEnvironment:
    return suite.make_environment(
        s, run_loop.environment_seed(s.seed, iteration, phase))

  return make


def build_agent(suite, s: settings_lib.Settings, num_actions: int,
                network_fn=None
                ) -> Tuple[agent_lib.QuantileAgent, replay_lib.FrameReplay]:
  """Return (agent, replay) for resolved settings `s`.

  `network_fn` (default: the suite's) is a Haiku fn(observations) ->
  QuantileNetworkOutputs.
  """
  if network_fn is None:
    network_fn = suite.network_fn(s, num_actions)
  observation_shape = tuple(suite.observation_shape(s))
  frame_shape = observation_shape[:-1]
  rng = np.random.RandomState(s.seed)
  replay_class = (device_replay.DeviceFrameReplay if s.replay_on_device
                  else replay_lib.FrameReplay)
  replay = replay_class(
      s.replay_capacity, s.num_envs, frame_shape, s.num_stacked_frames,
      seed=int(rng.randint(2**31 - 1)))
  epsilon = agent_lib.LinearSchedule(
      begin_value=s.exploration_epsilon_begin_value,
      end_value=s.exploration_epsilon_end_value,
      begin_t=s.epsilon_begin_frame(), decay_steps=s.epsilon_decay_frames())
  grad_scale = 2.0 / s.num_quantiles if s.scale_grad else 1.0
  config = agent_lib.AgentConfig(
      batch_size=s.batch_size, min_replay_size=s.min_replay_size(),
      learn_period=s.learn_period,
      target_network_update_period=s.target_network_update_period,
      num_action_repeats=s.num_action_repeats,
      additional_discount=s.additional_discount,
      max_abs_reward=s.max_abs_reward, grad_scale=grad_scale,
      eval_exploration_epsilon=s.eval_exploration_epsilon,
      num_fused_updates=s.num_fused_updates)
  agent = agent_lib.QuantileAgent(
      network=hk.transform(network_fn),
      loss_fn=agent_lib.make_loss_fn(s.loss, s.huber_param),
      optimizer=agent_lib.make_optimizer(s.learning_rate, s.optimizer_epsilon,
                                         s.max_global_grad_norm),
      replay=replay,
      sample_observation=np.zeros(observation_shape, np.uint8),
      exploration_epsilon=epsilon,
      config=config,
      rng_key=jax.random.PRNGKey(rng.randint(2**31 - 1)))
  return agent, replay
