"""NC-CR-DQN: non-crossing quantile head, sort-based Cramér loss."""

from zoo.agents import AgentPreset

# κ is unused by the Cramér loss; 1.0 is the value runs have always stored.
PRESETS = (
    AgentPreset('NC-CR-DQN', 'nc_cr_dqn', head='nc', loss='cramer',
                huber_param=1.0, scale_grad=False,
                summary='Cramér loss with non-crossing quantiles; Adam ε × '
                '2/N.'),
)
DEFAULT_PRESET = 'NC-CR-DQN'
