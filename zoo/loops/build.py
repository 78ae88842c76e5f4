"""Build a run's parts from its settings: environments, learner, agent, replay.

`learner_parts` is the one place that turns settings into the learner's
parts; both loops and the benchmarks use it.
"""

import functools
from typing import Any, Callable, NamedTuple, Tuple

import haiku as hk
import jax
import numpy as np

from zoo.agent import catalog
from zoo.agent import counts as counts_lib
from zoo.agent import learning as agent_lib
from zoo.agent import quantile_agent
from zoo.replay import device_replay
from zoo.environments import environment
from zoo.replay import frame_replay as replay_lib
from zoo.configuration import settings as settings_lib


PHASES = ('train', 'eval')


def environment_seed(seed: int, iteration: int, phase: str) -> int:
  """Return the seed of the environment of one phase of one iteration."""
  state = np.random.SeedSequence([seed, iteration, PHASES.index(phase)])
  return int(state.generate_state(1)[0] % (2**31 - 1))


def make_environment_factory(suite, s: settings_lib.Settings
                             ) -> Callable[[int, str],
                                           environment.BatchedEnvironment]:
  """Return fn(iteration, phase) -> a fresh, deterministically seeded env."""

  def make(iteration: int, phase: str) -> environment.BatchedEnvironment:
    return suite.make_environment(
        s, environment_seed(s.seed, iteration, phase),
        training=phase == 'train')

  return make


def epsilon_schedule(s: settings_lib.Settings) -> agent_lib.LinearSchedule:
  """Return the training ε by frame (both loops)."""
  return agent_lib.LinearSchedule(
      begin_value=s.exploration_epsilon_begin_value,
      end_value=s.exploration_epsilon_end_value,
      begin_t=s.epsilon_begin_frame(), decay_steps=s.epsilon_decay_frames())


def make_network(suite, s: settings_lib.Settings, num_actions: int,
                 network_fn=None):
  """Return the network of settings `s`, transformed.

  `network_fn` (default: the suite's): fn(observations), or fn(observations,
  levels) with a head at sampled levels, then wrapped as a
  zoo.agent.learning.SampledLevelNetwork of the settings' tau_samples_*.
  """
  if network_fn is None:
    network_fn = suite.network_fn(s, num_actions)
  network = hk.transform(network_fn)
  if not catalog.HEADS[s.head].sampled_levels:
    return network
  return agent_lib.at_sampled_levels(network, agent_lib.LevelCounts(
      policy=s.tau_samples_policy, online=s.tau_samples_s_tm1,
      target=s.tau_samples_s_t))


class LearnerParts(NamedTuple):
  """What a loop's learner is made of, from the settings."""
  network: Any                         # hk.Transformed or SampledLevelNetwork.
  loss_fn: agent_lib.LossFn            # The loss of the settings' κ.
  # fn(κ) -> the loss, κ a float or an array (the jitted loop's: κ as data).
  loss_of_kappa: Callable[[Any], agent_lib.LossFn]
  optimizer: Any                       # optax, with Adam's ε of the settings.
  replay_seed: int                     # The Python loop's replay sampler.
  agent_key: jax.Array                 # Initial parameters, acting, learning.


def learner_parts(suite, s: settings_lib.Settings, num_actions: int,
                  network_fn=None) -> LearnerParts:
  """Return the learner's parts of resolved settings `s`.

  `network_fn`: as make_network's. The seed's draws come in one order, so
  that both loops start a seed from the same parameters.
  """
  network = make_network(suite, s, num_actions, network_fn)
  rng = np.random.RandomState(s.seed)
  replay_seed = int(rng.randint(2**31 - 1))
  agent_key = jax.random.PRNGKey(rng.randint(2**31 - 1))
  loss_of_kappa = functools.partial(agent_lib.make_loss_fn, s.loss,
                                    **agent_lib.loss_settings(s))
  return LearnerParts(
      network=network,
      loss_fn=loss_of_kappa(s.huber_param), loss_of_kappa=loss_of_kappa,
      optimizer=agent_lib.make_optimizer(s.learning_rate, s.optimizer_epsilon,
                                         s.max_global_grad_norm),
      replay_seed=replay_seed, agent_key=agent_key)


def n_step(s: settings_lib.Settings) -> replay_lib.NStep:
  """Return the replay's returns of settings `s` (both loops' replays)."""
  return replay_lib.NStep(n=s.n_steps, discount=s.additional_discount)


def counts(s: settings_lib.Settings, observation_shape
           ) -> counts_lib.Counts:
  """Return the counts of resolved settings `s` (the one mapping)."""
  return counts_lib.Counts(
      num_streams=s.num_envs, observation_shape=tuple(observation_shape),
      replay_capacity=s.replay_capacity, batch_size=s.batch_size,
      min_replay_size=s.min_replay_size(), learn_period=s.learn_period,
      target_period=s.target_network_update_period,
      num_action_repeats=s.num_action_repeats,
      additional_discount=s.additional_discount,
      max_abs_reward=s.max_abs_reward,
      grad_scale=2.0 / s.num_atoms() if s.scale_grad else 1.0,
      epsilon=epsilon_schedule(s), eval_epsilon=s.eval_exploration_epsilon,
      num_train_frames=s.num_train_frames,
      num_eval_frames=s.num_eval_frames,
      num_fused_updates=s.num_fused_updates,
      overlap_learning=s.overlap_learning)


def build_agent(suite, s: settings_lib.Settings, num_actions: int,
                network_fn=None
                ) -> Tuple[quantile_agent.QuantileAgent,
                           replay_lib.FrameReplay]:
  """Return (agent, replay) for resolved settings `s` (learner_parts')."""
  parts = learner_parts(suite, s, num_actions, network_fn)
  cfg = counts(s, suite.observation_shape(s))
  replay_class = (device_replay.DeviceFrameReplay if s.replay_on_device
                  else replay_lib.FrameReplay)
  replay = replay_class(
      s.replay_capacity, s.num_envs, cfg.observation_shape[:-1],
      s.num_stacked_frames, seed=parts.replay_seed, n_step=n_step(s))
  agent = quantile_agent.QuantileAgent(
      network=parts.network, loss_fn=parts.loss_fn, optimizer=parts.optimizer,
      replay=replay, config=cfg, rng_key=parts.agent_key)
  return agent, replay
