"""One run of a campaign: its record, its files and the rule that it is done.

A run is one process: an agent package on a game of a suite with its flags,
one seed (the Python loop) or several vmapped (`--loop=jitted`). Each seed
lives in the runs' usual layout, ROOT/[GROUP/]{agent}/{game}/seed_{seed}/,
and is done when its results.csv holds every iteration 0..num_iterations.
"""

import dataclasses
import os
import sys
from typing import List, Optional, Tuple

from scripts.analysis import run_data

SUITES = ('atari', 'minatar')
RESULTS_FILE = 'results.csv'
CHECKPOINT_DIR = 'checkpoints'
LOG_FILE = 'run.log'
EXIT_FILE = 'exit.json'


@dataclasses.dataclass(frozen=True)
class Run:
  """One process of a campaign (the fields are plain data: JSON-able)."""
  agent: str                    # Package, whose run_<suite> runs it.
  suite: str                    # 'atari' or 'minatar'.
  game: str
  seeds: Tuple[int, ...]        # One, or several with jitted.
  flags: Tuple[str, ...] = ()   # The run's flags beyond game, seed, files.
  group: str = ''               # Folder under the campaign's root.
  jitted: bool = False          # --loop=jitted, the seeds vmapped.
  label: str = ''               # The configuration's name (reports).

  def __post_init__(self):
    if self.suite not in SUITES:
      raise ValueError(f'{self.name}: unknown suite {self.suite!r}; choose '
                       f'from {", ".join(SUITES)}.')
    if not self.seeds or (len(self.seeds) > 1 and not self.jitted):
      raise ValueError(f'{self.name}: the Python loop runs one seed per '
                       f'process, got {list(self.seeds)}; set "jitted": '
                       'true to vmap several.')

  @property
  def name(self) -> str:
    seeds = ','.join(map(str, self.seeds))
    return os.path.join(self.group, self.agent, self.game, f'seed_{seeds}')

  def seed_dir(self, root: str, seed) -> str:
    return os.path.join(os.path.abspath(root), self.group, self.agent,
                        self.game, f'seed_{seed}')

  def seed_dirs(self, root: str) -> List[str]:
    return [self.seed_dir(root, s) for s in self.seeds]

  def home(self, root: str) -> str:
    """The folder of the launcher's files (log, exit status)."""
    if self.jitted:
      return os.path.dirname(self.seed_dirs(root)[0])
    return self.seed_dirs(root)[0]

  def command(self, root: str, python: str = sys.executable) -> List[str]:
    """Return the run's command line."""
    head = [python, '-m', f'{self.agent}.run_{self.suite}']
    if self.jitted:
      # The run fills in each seed's folder.
      run_dir = os.path.join(os.path.abspath(root), self.group, '{agent}',
                             '{environment_name}', 'seed_{seed}')
      head += ['--loop=jitted', '--seeds=' + ','.join(map(str, self.seeds)),
               f'--environment_name={self.game}']
    else:
      run_dir = self.seed_dirs(root)[0]
      head += [f'--environment_name={self.game}', f'--seed={self.seeds[0]}']
    return head + [
        f'--results_csv_path={os.path.join(run_dir, RESULTS_FILE)}',
        f'--checkpoint_dir={os.path.join(run_dir, CHECKPOINT_DIR)}',
        *self.flags]

  def flag(self, name: str) -> Optional[str]:
    """Return the last value of --name among the flags, if any."""
    value = None
    for flag in self.flags:
      if flag.startswith(f'--{name}='):
        value = flag.split('=', 1)[1]
    return value

  def setting(self, name: str):
    """Return a setting of the run: its flag, its protocol's, the suite's.

    Raises ValueError naming the fix for an unknown setting or protocol.
    """
    # pylint: disable=g-import-not-at-top
    from zoo.configuration import protocols
    from zoo.configuration import settings as settings_lib
    defaults = {f.name: f.default
                for f in dataclasses.fields(settings_lib.Settings)}
    if name not in defaults:
      raise ValueError(f'{name!r} is not a run setting.')
    default = defaults[name]
    given = self.flag(name)
    if given is not None:
      if isinstance(default, bool):
        return given.lower() in ('1', 'true', 't', 'yes')
      return type(default)(given) if default is not None else given
    protocol = self.flag('protocol') or 'dqn_zoo'
    if protocol not in protocols.PROTOCOLS:
      raise ValueError(f'{self.name}: unknown --protocol={protocol}; choose '
                       f'from {", ".join(protocols.PROTOCOLS)}.')
    values = protocols.PROTOCOLS[protocol].values
    if name in values:
      return values[name]
    if self.suite == 'minatar':
      from zoo.suites import minatar_suite  # MinAtar is an extra.
      return minatar_suite.FLAG_DEFAULTS.get(name, default)
    return default

  def num_iterations(self) -> int:
    """Iterations of a complete run."""
    return int(self.setting('num_iterations'))

  def csv_paths(self, root: str) -> List[str]:
    return [os.path.join(d, RESULTS_FILE) for d in self.seed_dirs(root)]

  def iterations_done(self, root: str) -> int:
    """Return the fewest iterations any seed's CSV holds (0: none)."""
    return min(len(set(run_data.iterations(p))) for p in self.csv_paths(root))

  def done(self, root: str) -> bool:
    """Whether every seed's CSV holds iterations 0..num_iterations."""
    wanted = set(range(self.num_iterations() + 1))
    # A damaged CSV is not done; the run itself says why.
    return all(wanted <= set(run_data.iterations(p))
               for p in self.csv_paths(root))
