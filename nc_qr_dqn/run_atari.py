"""NC-QR-DQN on Atari: non-crossing head, QR loss κ = 1, Adam ε 0.01/32; --huber_param=0 --scale_grad gives NC-QR-DQN-0 (gradient × 2/N, ε (0.01/32)·(2/N)).

Usage: python -m nc_qr_dqn.run_atari --environment_name=pong --seed=1 \
  --results_csv_path=/tmp/nc_qr_dqn/pong_1.csv --checkpoint_dir=/tmp/nc_qr_dqn/pong_1
All flags: zoo/run_atari.py (DQN Zoo names and defaults, counts in frames).
"""

from absl import app

from zoo import run_atari

AGENT = 'nc_qr_dqn'


def main(argv):
  run_atari.main(argv, AGENT)


if __name__ == '__main__':
  app.run(main)
