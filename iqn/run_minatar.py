"""IQN on MinAtar: the IQN network, levels sampled per state and per use.

Presets (--preset=NAME, iqn/agent.py): IQN, CR-IQN.

Usage: python -m iqn.run_minatar --environment_name=breakout --seed=1
writes runs/minatar/iqn/breakout/seed_1/ (results.csv, run.json, tensorboard/,
checkpoints/); rerun the same command to resume. The run's flags are below
with MinAtar's defaults (zoo/suites/minatar_suite.py; 1e6 accepted).
"""

from zoo.loops import interrupts

if __name__ == '__main__':
  # Before importing JAX (seconds): a Ctrl-C must not raise inside it.
  interrupts.install()

# pylint: disable=g-import-not-at-top,wrong-import-position
from absl import flags

from iqn import agent
from zoo.loops import runner
from zoo.suites import minatar_suite
from zoo.configuration import settings_flags
from zoo.configuration import cli

flags.adopt_module_key_flags(settings_flags)  # --help lists the run's flags.


def main(argv):
  runner.main(argv, minatar_suite.MINATAR, agent.PRESETS,
                  agent.DEFAULT_PRESET)


if __name__ == '__main__':
  # --help shows MinAtar's defaults too.
  settings_flags.set_flag_defaults(minatar_suite.MINATAR)
  cli.run(main)
