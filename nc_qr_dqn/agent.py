"""NC-QR-DQN: non-crossing quantile head, quantile regression loss."""

from zoo.agents import AgentPreset

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
