"""CR-DQN on Atari: FC head, sort-based Cramér loss, Adam ε (0.01/32)·(2/N).

Usage: python -m cr_dqn.run_atari --environment_name=pong --seed=1 \
  --results_csv_path=/tmp/cr_dqn/pong_1.csv --checkpoint_dir=/tmp/cr_dqn/pong_1
All flags: zoo/run_atari.py (DQN Zoo names and defaults, counts in frames).
"""

from absl import app

from zoo import run_atari

AGENT = 'cr_dqn'


def main(argv):
  run_atari.main(argv, AGENT)


if __name__ == '__main__':
  app.run(main)
