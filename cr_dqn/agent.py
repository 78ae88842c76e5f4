"""CR-DQN: FC head, sort-based Cramér loss.

The algorithm lives in zoo: the shared agent (zoo/agent.py: the TD target,
ε-greedy acting, the update) and the loss it calls (losses/cramer.py; the
multiquadric-smoothed one in losses/smoothed_cramer.py). This package names
the presets and holds the entry points.
"""

from zoo.agents import AgentPreset

# κ is unused by the Cramér losses; 1.0 is the value runs have always stored.
PRESETS = (
    AgentPreset('CR-DQN', 'cr_dqn', head='fc', loss='cramer', huber_param=1.0,
                scale_grad=False,
                summary='Cramér loss on sorted quantiles; Adam ε × 2/N.'),
    # The width that lowered both d1 and the atoms' oscillation below the
    # Cramér loss's in the synthetic experiment (docs: A smoothed Cramér loss).
    AgentPreset('CR-DQN-MQ', 'cr_dqn', head='fc', loss='multiquadric_cramer',
                huber_param=1.0, scale_grad=False, smoothing_width=0.003,
                summary='Cramér loss with a smooth kernel (the paper\'s open '
                        'question); Adam ε × 2/N.'),
)
DEFAULT_PRESET = 'CR-DQN'
