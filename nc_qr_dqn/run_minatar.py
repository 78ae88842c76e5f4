"""NC-QR-DQN on MinAtar: non-crossing head, QR loss κ = 1, Adam ε 0.01/32; --huber_param=0 --scale_grad gives NC-QR-DQN-0 (gradient × 2/N, ε (0.01/32)·(2/N)).

Usage: python -m nc_qr_dqn.run_minatar --environment_name=breakout --seed=1
All flags: zoo/experiment.py; MinAtar's defaults: zoo/run_minatar.py.
"""

from absl import app

from zoo import experiment
from zoo import run_minatar

AGENT = 'nc_qr_dqn'


def main(argv):
  run_minatar.main(argv, AGENT)


if __name__ == '__main__':
  experiment.set_flag_defaults(run_minatar.MINATAR)
  app.run(main)
