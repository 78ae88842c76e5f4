"""QR-DQN on MinAtar: FC head, quantile regression loss (κ = --huber_param, 1 by default; 0 gives QR-DQN-0), Adam ε 0.01/32.

Usage: python -m qr_dqn.run_minatar --environment_name=breakout --seed=1
writes runs/minatar/qr_dqn/breakout/seed_1/ (results.csv, run.json,
tensorboard/, checkpoints/); rerun the same command to resume. The run's flags
are below, with MinAtar's defaults (zoo/run_minatar.py; 1e6 accepted).
"""

from zoo import interrupts

if __name__ == '__main__':
  # Before importing JAX (seconds): a Ctrl-C must not raise inside it.
  interrupts.install()

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import app
from absl import flags

from zoo import experiment
from zoo import run_minatar

flags.adopt_module_key_flags(experiment)  # --help lists the run's flags.

AGENT = 'qr_dqn'


def main(argv):
  run_minatar.main(argv, AGENT)


if __name__ == '__main__':
  experiment.set_flag_defaults(run_minatar.MINATAR)  # --help shows them too.
  app.run(main)
