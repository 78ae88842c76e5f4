"""QR-DQN (Dabney et al., 2018): FC head, quantile regression loss."""

from zoo.agents import AgentPreset

PRESETS = (
    AgentPreset('QR-DQN-1', 'qr_dqn', head='fc', loss='qr', huber_param=1.0,
                scale_grad=False,
                summary='Quantile regression with the Huber loss (κ = 1).'),
    AgentPreset('QR-DQN-0', 'qr_dqn', head='fc', loss='qr', huber_param=0.0,
                scale_grad=False,
                summary='Quantile regression, plain (κ = 0).'),
)
DEFAULT_PRESET = 'QR-DQN-1'
