"""NC-CR-DQN on Atari: non-crossing head, Cramér loss, Adam ε (0.01/32)·(2/N).

Usage: python -m nc_cr_dqn.run_atari --environment_name=pong --seed=1 \
  --results_csv_path=/tmp/nc_cr_dqn/pong_1.csv --checkpoint_dir=/tmp/nc_cr_dqn/pong_1
All flags: zoo/run_atari.py (DQN Zoo names and defaults, counts in frames).
"""

from absl import app

from zoo import run_atari

AGENT = 'nc_cr_dqn'


def main(argv):
  run_atari.main(argv, AGENT)


if __name__ == '__main__':
  app.run(main)
