"""CR-DQN: FC head, sort-based Cramér loss."""

from zoo.agents import AgentPreset

# κ is unused by the Cramér loss; 1.0 is the value runs have always stored.
PRESETS = (
    AgentPreset('CR-DQN', 'cr_dqn', head='fc', loss='cramer', huber_param=1.0,
                scale_grad=False,
                summary='Cramér loss on sorted quantiles; Adam ε × 2/N.'),
)
DEFAULT_PRESET = 'CR-DQN'
