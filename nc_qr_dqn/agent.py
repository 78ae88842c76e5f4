"""NC-QR-DQN: non-crossing quantile head, quantile regression loss.

The algorithm lives in the shared agent (zoo/agent/learning.py: ε-greedy
acting, the TD target, the update; zoo/agent/quantile_agent.py acts and learns
in the Python loop), the non-crossing head (networks/) and the loss it calls
(losses/quantile_regression.py). This package names the presets and holds the
entry points.
"""

from zoo.configuration.agent_registry import AgentPreset

PRESETS = (
    AgentPreset('NC-QR-DQN-1', 'nc_qr_dqn', head='nc', loss='qr',
                huber_param=1.0, scale_grad=False,
                summary='Non-crossing quantiles, Huber QR loss (κ = 1).'),
    AgentPreset('NC-QR-DQN-0', 'nc_qr_dqn', head='nc', loss='qr',
                huber_param=0.0, scale_grad=True,
                summary='Non-crossing quantiles, plain QR loss, gradient × '
                '2/N; Adam ε × 2/N.'),
)
DEFAULT_PRESET = 'NC-QR-DQN-1'
