"""Haiku Q-networks: quantile heads (FC as QR-DQN, non-crossing NC) and IQN."""

from networks.heads import fc_quantile_head
from networks.heads import nc_quantile_head
from networks.heads import ScaleActivation
from networks.iqn_network import atari_iqn_network
from networks.iqn_network import cosine_features
from networks.iqn_network import iqn_network
from networks.iqn_network import minatar_iqn_network
from networks.layers import conv
from networks.layers import dqn_default_initializer
from networks.layers import linear
from networks.layers import NetworkFn
from networks.quantile_network import atari_quantile_network
from networks.quantile_network import minatar_quantile_network
from networks.quantile_network import quantile_network
from networks.quantile_network import QuantileNetworkOutputs
from networks.torsos import ATARI_TORSOS
from networks.torsos import der_torso
from networks.torsos import dqn_torso
from networks.torsos import minatar_torso
from networks.torsos import mlp_torso
