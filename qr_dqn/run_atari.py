"""QR-DQN on Atari: FC head, quantile regression loss (κ = --huber_param, 1 by default; 0 gives QR-DQN-0), Adam ε 0.01/32.

Usage: python -m qr_dqn.run_atari --environment_name=pong --seed=1 \
  --results_csv_path=/tmp/qr_dqn/pong_1.csv --checkpoint_dir=/tmp/qr_dqn/pong_1
All flags: zoo/run_atari.py (DQN Zoo names and defaults, counts in frames).
"""

from absl import app

from zoo import run_atari

AGENT = 'qr_dqn'


def main(argv):
  run_atari.main(argv, AGENT)


if __name__ == '__main__':
  app.run(main)
