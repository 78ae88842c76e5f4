"""Protocols: named sets of setting values, declared once (--protocol).

A protocol fills every flag that the command line leaves unset (an explicit
flag wins, as over a preset); `zoo.configuration.settings.resolve_settings`
applies it. docs/atari100k.md tables atari100k's values beside DQN Zoo's.
"""

from typing import Any, Mapping, NamedTuple, Optional, Tuple

from zoo.configuration import agent_registry


class Protocol(NamedTuple):
  """One protocol: the suites it runs on and the values it gives."""
  summary: str  # One line for --help and the docs.
  suites: Optional[Tuple[str, ...]]  # The suites' names it runs on; None: all.
  values: Mapping[str, Any]  # Flag values (by setting name), counts in frames.
  # Adam's ε before the 2/N rule of the Cramér losses and --scale_grad
  # (agent_registry.default_optimizer_epsilon), where --optimizer_epsilon is
  # unset.
  base_optimizer_epsilon: float = agent_registry.BASE_OPTIMIZER_EPSILON


# Dopamine's labs/atari_100k/configs/DER.gin (the gin line beside each
# value); an agent step is 4 frames.
_ATARI_100K = dict(
    num_iterations=10,                # Runner.num_iterations = 10
    num_train_frames=40_000,          # Runner.training_steps = 10_000
    max_frames_per_episode=108_000,   # Runner.max_steps_per_episode = 27_000
    # AtariPreprocessing.terminal_on_life_loss = True (in training here).
    life_loss_ends_train_episode=True,
    replay_capacity=100_000,          # Every step of the run (gin: 1M).
    min_replay_capacity_fraction=0.016,  # min_replay_history = 1_600
    learn_period=4,                   # update_period = 1
    target_network_update_period=8_000,  # target_update_period = 2_000
    exploration_epsilon_begin_value=1.0,
    exploration_epsilon_end_value=0.01,  # epsilon_train = 0.01
    # epsilon_decay_period = 2_000 steps: 8,000 of the 400,000 frames.
    exploration_epsilon_decay_frame_fraction=0.02,
    eval_exploration_epsilon=0.001,   # epsilon_eval = 0.001
    learning_rate=1e-4,               # create_optimizer.learning_rate
    max_global_grad_norm=0.0,         # create_optimizer: optax.adam, no clip
    batch_size=32,                    # ReplayBuffer.batch_size = 32
    n_steps=10,                       # JaxDQNAgent.update_horizon = 10
    torso='der',                      # DER's network (van Hasselt et al.)
    hidden_size=256,
    # MaxEpisodeEvalRunner.num_eval_episodes = 100, after the last
    # iteration's training; 10 whole episodes at the iterations before.
    num_eval_episodes=10,
    num_final_eval_episodes=100,
)

PROTOCOLS = {
    'dqn_zoo': Protocol("DQN Zoo's: the flags' defaults", None, {}),
    'atari100k': Protocol(
        'Atari 100k (DER.gin): 10 iterations of 10,000 agent steps, DER '
        "network and settings", ('atari',), _ATARI_100K,
        base_optimizer_epsilon=1.5e-4),  # create_optimizer.eps = 0.00015
}
