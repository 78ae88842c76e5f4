"""NC-CR-DQN: non-crossing quantile head, sort-based Cramér loss.

The algorithm lives in the shared agent (zoo/agent/learning.py: ε-greedy
acting, the TD target, the update; zoo/agent/quantile_agent.py acts and learns
in the Python loop), the non-crossing head (networks/) and the loss it calls
(losses/cramer.py). This package names the presets and holds the entry points.
"""

from zoo.configuration.agent_registry import AgentPreset

# κ is unused by the Cramér loss; it is 1.0 in this preset's settings,
# which run.json and every checkpoint record (a resume compares them).
PRESETS = (
    AgentPreset('NC-CR-DQN', 'nc_cr_dqn', head='nc', loss='cramer',
                huber_param=1.0, scale_grad=False,
                summary='Cramér loss with non-crossing quantiles; Adam ε × '
                '2/N.'),
)
DEFAULT_PRESET = 'NC-CR-DQN'
