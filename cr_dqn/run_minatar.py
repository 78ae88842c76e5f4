"""CR-DQN on MinAtar: FC head, sort-based Cramér loss, Adam ε (0.01/32)·(2/N).

Usage: python -m cr_dqn.run_minatar --environment_name=breakout --seed=1
All flags: zoo/experiment.py; MinAtar's defaults: zoo/run_minatar.py.
"""

from absl import app

from zoo import experiment
from zoo import run_minatar

AGENT = 'cr_dqn'


def main(argv):
  run_minatar.main(argv, AGENT)


if __name__ == '__main__':
  experiment.set_flag_defaults(run_minatar.MINATAR)
  app.run(main)
