"""IQN (Dabney et al., 2018) and CR-IQN: the IQN network, levels sampled.

The algorithm lives in the shared agent (zoo/agent/learning.py: ε-greedy
acting on the mean over the policy's sampled levels, DQN Zoo's TD target,
the update; zoo/agent/quantile_agent.py acts and learns in the Python loop),
the IQN network (networks/iqn_network.py) and the losses it calls
(losses/sampled_levels.py). This package names the presets and holds the
entry points.
"""

from zoo.configuration.agent_registry import AgentPreset

PRESETS = (
    AgentPreset('IQN', 'iqn', head='iqn', loss='sampled_qr', huber_param=1.0,
                scale_grad=False,
                summary='Quantile regression at sampled levels, Huber κ = 1 '
                        '(DQN Zoo\'s IQN).'),
    # κ is unused by the Cramér loss; 1.0 as in CR-DQN (see cr_dqn/agent.py).
    AgentPreset('CR-IQN', 'iqn', head='iqn', loss='sampled_cramer',
                huber_param=1.0, scale_grad=False,
                summary='Unbiased Cramér loss between samples, by sorting; '
                        'Adam ε × 2/N.'),
)
DEFAULT_PRESET = 'IQN'
