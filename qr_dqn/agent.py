"""QR-DQN (Dabney et al., 2018): FC head, quantile regression loss.

The algorithm lives in the shared agent (zoo/agent/learning.py: ε-greedy
acting, the TD target, the update; zoo/agent/quantile_agent.py acts and learns
in the Python loop), the FC head (networks/) and the loss it calls
(losses/quantile_regression.py). This package names the presets and holds the
entry points.
"""

from zoo.configuration.agent_registry import AgentPreset

PRESETS = (
    AgentPreset('QR-DQN-1', 'qr_dqn', head='fc', loss='qr', huber_param=1.0,
                scale_grad=False,
                summary='Quantile regression with the Huber loss (κ = 1).'),
    AgentPreset('QR-DQN-0', 'qr_dqn', head='fc', loss='qr', huber_param=0.0,
                scale_grad=False,
                summary='Quantile regression, plain (κ = 0).'),
)
DEFAULT_PRESET = 'QR-DQN-1'
