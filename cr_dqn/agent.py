"""CR-DQN: FC head, sort-based Cramér loss.

The algorithm lives in the shared agent (zoo/agent/learning.py: ε-greedy
acting, the TD target, the update; zoo/agent/quantile_agent.py acts and
learns in the Python loop), the FC head (networks/) and the loss it calls
(losses/cramer.py; the multiquadric one in losses/smoothed_cramer.py). This
package names the presets and holds the entry points.
"""

from zoo.configuration.agent_registry import AgentPreset

# κ is unused by the Cramér losses; it is 1.0 in these presets' settings,
# which run.json and every checkpoint record (a resume compares them).
PRESETS = (
    AgentPreset('CR-DQN', 'cr_dqn', head='fc', loss='cramer', huber_param=1.0,
                scale_grad=False,
                summary='Cramér loss on sorted quantiles; Adam ε × 2/N.'),
    # The width that lowered both d1 and the atoms' oscillation below the
    # Cramér loss's in the synthetic experiment (docs: A smoothed Cramér
    # loss).
    AgentPreset('CR-DQN-MQ', 'cr_dqn', head='fc', loss='multiquadric_cramer',
                huber_param=1.0, scale_grad=False, smoothing_width=0.003,
                summary='Cramér loss with a smooth kernel (the paper\'s open '
                        'question); Adam ε × 2/N.'),
)
DEFAULT_PRESET = 'CR-DQN'
