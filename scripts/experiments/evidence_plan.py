"""The evidence plan: what the evidence command runs, in order of value.

The plan is this module's pieces (and, for presets added later, their MinAtar
pieces): each piece is a set of runs that must complete in one command, since
nothing on a short GPU allocation is kept for the next one. Progress is not
kept here: a piece is done when the results folder (evidence/) holds a
session that completed it (scripts.experiments.evidence_store).

Run length, fixed for the whole MinAtar plan: 500k steps per seed (5
iterations of 100k training steps, 25k evaluation steps after each and before
the first; ε from 1 to 0.1 over the first 100k steps), the reference study's
length (docs/minatar/report.md, scripts.experiments.minatar_study). Young &
Tian's 5M does not fit: a piece must finish within one command, and the plan
is sized for commands of about 10 minutes (the shortest allocations); 5M
training plus 1.275M evaluation steps per seed in about 7 minutes would need more than 15,000 steps/s per seed for
two processes of ten seeds at once; the jitted loop ran at 250 steps/s per
seed on the CPU and is not measured on a GPU yet. Changing the length later
would make the pieces already done incomparable with the next ones.
"""

import dataclasses
from typing import Dict, Iterable, List, Mapping, Optional, Sequence, Tuple

MINATAR_GAMES = ('asterix', 'breakout', 'freeway', 'seaquest',
                 'space_invaders')
MINATAR_SEEDS = tuple(range(1, 11))
MINATAR_ITERATIONS = 5
MINATAR_TRAIN_STEPS = 100_000
MINATAR_EVAL_STEPS = 25_000
EPSILON_DECAY_STEPS = 100_000
RUN_LENGTH_STEPS = MINATAR_ITERATIONS * MINATAR_TRAIN_STEPS

ATARI_TRAIN_FRAMES = 1_000_000
ATARI_EVAL_FRAMES = 500_000
# DQN Zoo's ε decays over 0.02 of 200M frames; kept in frames for any length.
ATARI_EPSILON_DECAY_FRAMES = 4_000_000
ATARI_MAX_ITERATIONS = 200
ATARI_SEED = 1
# When no benchmark of the device names the fastest mode: the mode of the
# longest GPU runs so far (Breakout 2M frames, H200, 2026-11-26).
ATARI_DEFAULT_MODE = 'vector:64'

# The package that runs each preset (zoo.configuration.agent_registry's registry, written out so
# that the plan reads without importing JAX).
PACKAGES = {'CR-DQN': 'cr_dqn', 'QR-DQN-1': 'qr_dqn', 'QR-DQN-0': 'qr_dqn',
            'NC-CR-DQN': 'nc_cr_dqn', 'NC-QR-DQN-0': 'nc_qr_dqn',
            'NC-QR-DQN-1': 'nc_qr_dqn'}
STUDY_PRESETS = ('CR-DQN', 'QR-DQN-1', 'QR-DQN-0', 'NC-CR-DQN', 'NC-QR-DQN-0')


@dataclasses.dataclass(frozen=True)
class Piece:
  """A set of runs that completes within one command."""
  id: str
  title: str
  suite: str                 # 'minatar' (jitted loop) or 'atari'.
  game: str
  presets: Tuple[str, ...]   # One run per preset.
  judge: bool = False        # Atari: compare_published after the run.


@dataclasses.dataclass(frozen=True)
class Scale:
  """The sizes of a command: the plan's ('full') or a tiny rehearsal."""
  name: str
  minatar_iterations: int
  minatar_train_steps: int
  minatar_eval_steps: int
  minatar_seeds: Tuple[int, ...]
  minatar_extra: Tuple[str, ...]
  atari_train_frames: int
  atari_eval_frames: int
  atari_extra: Tuple[str, ...]
  runs_per_piece: Optional[int]  # None: every run of a piece.
  atari_default_mode: str = ATARI_DEFAULT_MODE  # When no benchmark says.


FULL = Scale('full', MINATAR_ITERATIONS, MINATAR_TRAIN_STEPS,
             MINATAR_EVAL_STEPS, MINATAR_SEEDS, (), ATARI_TRAIN_FRAMES,
             ATARI_EVAL_FRAMES, (), None)
# Seconds on a CPU, through the same commands; one run per piece, 2 seeds.
REHEARSAL = Scale(
    'rehearsal', 1, 1000, 200, (1, 2),
    ('--replay_capacity=1000', '--min_replay_capacity_fraction=0.25',
     '--target_network_update_period=200', '--num_quantiles=11',
     '--hidden_size=16'),
    2000, 1000,
    ('--replay_capacity=2000', '--min_replay_capacity_fraction=0.25',
     '--target_network_update_period=400', '--num_quantiles=11',
     '--hidden_size=32'),
    1, 'vector:2')
SCALES = {s.name: s for s in (FULL, REHEARSAL)}


def _minatar_pieces(prefix: str, title: str, presets: Sequence[str]
                    ) -> List[Piece]:
  return [Piece(f'{prefix}-{game}', f'{title}, {game}', 'minatar', game,
                tuple(presets)) for game in MINATAR_GAMES]


def _atari(game: str) -> Piece:
  return Piece(f'atari-cr-dqn-{game}', f'Atari {game}, CR-DQN, fastest mode',
               'atari', game, ('CR-DQN',), judge=True)


def pieces(later_presets: Iterable[str] = ()) -> List[Piece]:
  """Return the plan in order of value.

  Args:
    later_presets: presets of the registry beyond the paper's (each adds its
      MinAtar pieces at the end).
  """
  plan = _minatar_pieces('minatar-cr-vs-qr1', 'MinAtar CR-DQN vs QR-DQN-1',
                         ('CR-DQN', 'QR-DQN-1'))
  plan.append(_atari('breakout'))
  plan += _minatar_pieces('minatar-others',
                          'MinAtar QR-DQN-0, NC-CR-DQN, NC-QR-DQN-0',
                          ('QR-DQN-0', 'NC-CR-DQN', 'NC-QR-DQN-0'))
  plan += [_atari(game) for game in ('asterix', 'seaquest', 'frostbite')]
  for preset in later_presets:
    if preset not in STUDY_PRESETS:
      plan += _minatar_pieces(f'minatar-{preset.lower()}', f'MinAtar {preset}',
                              (preset,))
  return plan


def registry_packages() -> Dict[str, str]:
  """{preset: package} of PACKAGES and the registry (zoo.configuration.agent_registry, which
  imports the agent packages): later presets add their MinAtar pieces."""
  from zoo.configuration import agent_registry  # pylint: disable=g-import-not-at-top
  return dict(PACKAGES,
              **{name: p.package for name, p in agent_registry.presets().items()})


def registry_plan() -> List[Piece]:
  """The plan with every preset of the registry."""
  return pieces(sorted(registry_packages()))


def pending(plan: Sequence[Piece], done: Iterable[str],
            only: Optional[Iterable[str]] = None) -> List[Piece]:
  """Return the pieces not done, in plan order (only: these ids)."""
  done = set(done)
  wanted = set(only) if only else None
  return [p for p in plan if p.id not in done and
          (wanted is None or p.id in wanted)]


@dataclasses.dataclass(frozen=True)
class Run:
  """One process of a piece: one preset, its seeds vmapped (MinAtar)."""
  piece: str
  label: str
  argv: Tuple[str, ...]      # After `python -m`.
  suite: str
  seeds: Tuple[int, ...]
  results_dir: str           # Where its CSVs land (relative to the session).
  iterations: int


def mode_flags(mode: str) -> Tuple[str, ...]:
  """Return the run flags of a bench_agent mode 'ENV:K[:uU][:device]'."""
  parts = mode.split(':')
  out = [f'--environment_mode={parts[0]}', f'--num_envs={int(parts[1])}']
  for option in parts[2:]:
    if option == 'device':
      out.append('--replay_on_device')
    elif option.startswith('u'):
      out.append(f'--num_fused_updates={int(option[1:])}')
  return tuple(out)


def runs(piece: Piece, scale: Scale, atari_iterations: int = 1,
         atari_mode: str = ATARI_DEFAULT_MODE,
         packages: Mapping[str, str] = PACKAGES) -> List[Run]:
  """Return the runs of a piece at a scale (Atari: that many iterations)."""
  out = []
  presets = piece.presets[:scale.runs_per_piece]
  for preset in presets:
    package = packages[preset]
    results_dir = f'runs/{piece.id}/{preset}'
    csv = f'{results_dir}/{{agent}}/{{environment_name}}/seed_{{seed}}/results.csv'
    common = (f'--preset={preset}', f'--environment_name={piece.game}',
              f'--results_csv_path={csv}', '--checkpoint_dir=',
              '--tensorboard_dir=')
    if piece.suite == 'minatar':
      total = scale.minatar_iterations * scale.minatar_train_steps
      argv = (f'{package}.run_minatar', '--loop=jitted',
              '--seeds=' + ','.join(map(str, scale.minatar_seeds)),
              f'--num_iterations={scale.minatar_iterations}',
              f'--num_train_frames={scale.minatar_train_steps}',
              f'--num_eval_frames={scale.minatar_eval_steps}',
              '--exploration_epsilon_decay_frame_fraction='
              f'{min(EPSILON_DECAY_STEPS / total, 1.0)!r}') + common
      argv += scale.minatar_extra
      out.append(Run(piece.id, preset, argv, 'minatar', scale.minatar_seeds,
                     results_dir, scale.minatar_iterations))
    else:
      total = atari_iterations * scale.atari_train_frames
      argv = (f'{package}.run_atari', f'--seed={ATARI_SEED}',
              f'--num_iterations={atari_iterations}',
              f'--num_train_frames={scale.atari_train_frames}',
              f'--num_eval_frames={scale.atari_eval_frames}',
              '--exploration_epsilon_decay_frame_fraction='
              f'{ATARI_EPSILON_DECAY_FRAMES / total!r}') + common
      argv += mode_flags(atari_mode) + scale.atari_extra
      out.append(Run(piece.id, preset, argv, 'atari', (ATARI_SEED,),
                     results_dir, atari_iterations))
  return out


def describe(plan: Sequence[Piece]) -> Dict[str, str]:
  """Return {piece id: its title} (for reports)."""
  return {p.id: p.title for p in plan}
