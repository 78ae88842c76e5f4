"""QR-DQN on MinAtar: FC head, quantile regression loss (κ = --huber_param, 1 by default; 0 gives QR-DQN-0), Adam ε 0.01/32.

Usage: python -m qr_dqn.run_minatar --environment_name=breakout --seed=1
All flags: zoo/experiment.py; MinAtar's defaults: zoo/run_minatar.py.
"""

from absl import app

from zoo import experiment
from zoo import run_minatar

AGENT = 'qr_dqn'


def main(argv):
  run_minatar.main(argv, AGENT)


if __name__ == '__main__':
  experiment.set_flag_defaults(run_minatar.MINATAR)
  app.run(main)
