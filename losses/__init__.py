"""Distributional losses between uniform staircase (quantile) distributions.

All take atoms [..., N] (last axis), broadcast leading dimensions, work under
jit, vmap and grad, and let gradients flow into the target unless the caller
stops them.
"""

from losses.cramer import cramer_loss
from losses.cramer import cramer_loss_pairwise
from losses.quantile_regression import quantile_regression_loss
from losses.sampled_levels import sampled_cramer_loss
from losses.sampled_levels import sampled_quantile_regression_loss
from losses.smoothed_cramer import atom_spread
from losses.smoothed_cramer import multiquadric_cramer_loss
from losses.smoothed_cramer import noisy_target_cramer_loss
from losses.wasserstein import wasserstein1

__all__ = (
    'atom_spread',
    'cramer_loss',
    'cramer_loss_pairwise',
    'multiquadric_cramer_loss',
    'noisy_target_cramer_loss',
    'quantile_regression_loss',
    'sampled_cramer_loss',
    'sampled_quantile_regression_loss',
    'wasserstein1',
)
