r"""Check runs against the published curves, iteration by iteration.

  python -m scripts.analysis.compare_published --runs=runs/cr_dqn/pong
  python -m scripts.analysis.compare_published --runs=QR-DQN-0=runs_k0 --plot=/tmp/check.png

For each of our runs and each of its iterations, prints our evaluation return
next to the published seeds of the same agent and game at the same frame (min,
mean and max over seeds) and marks iterations outside the published range.
The published variant comes from a --runs LABEL naming one, else the run.json
beside the CSV, else the package default, which the output says
(docs/experiments/atari57.md).
"""

import collections
import dataclasses
import math
import os
import sys
from typing import Any, Dict, List, Mapping, Optional, Sequence, Tuple

from absl import flags
import numpy as np

from scripts.analysis import run_data
from zoo.configuration import agent_registry
from zoo.configuration import cli
from zoo.storage import files
from zoo.storage import run_json

FLAGS = flags.FLAGS


@dataclasses.dataclass(frozen=True)
class Variant:
  """A published agent: where its runs are and the settings that define it."""
  name: str
  source: str           # run_data.REFERENCE_FILES key.
  reference_agent: str  # Its agent column there.
  package: str          # Our agent package that runs it.
  settings: Mapping[str, Any]


# The published runs of each preset (zoo.configuration.agent_registry): (run_data.REFERENCE_FILES
# key, its agent column there).
PUBLISHED = {name: ('paper', name) for name in (
    'CR-DQN', 'NC-CR-DQN', 'NC-QR-DQN-1', 'NC-QR-DQN-0', 'QR-DQN-0')}
PUBLISHED['QR-DQN-1'] = ('dqn_zoo', 'qrdqn')
# The NC head of the published runs.
PUBLISHED_NC_SCALE_ACTIVATION = 'relu'


def _variant(preset: agent_registry.AgentPreset) -> Variant:
  """Return the published variant of a preset: the settings that define it."""
  settings = dict(head=preset.head, loss=preset.loss,
                  scale_grad=preset.scale_grad)
  if preset.loss == 'qr':  # κ means nothing to the Cramér loss.
    settings['huber_param'] = preset.huber_param
  if preset.head == 'nc':
    settings['nc_scale_activation'] = PUBLISHED_NC_SCALE_ACTIVATION
  source, reference_agent = PUBLISHED[preset.name]
  return Variant(preset.name, source, reference_agent, preset.package,
                 settings)


_PRESETS = agent_registry.presets()
VARIANTS = {name: _variant(_PRESETS[name]) for name in PUBLISHED}
# What a package runs when run.json does not say otherwise.
PACKAGE_DEFAULTS = {package: agent_registry.default_preset(package).name
                    for package in sorted({v.package
                                           for v in VARIANTS.values()})}
# Settings that do not change what is compared with the published runs.
# Paths (where a run writes) and display settings are never protocol.
_NOT_PROTOCOL = ('results_csv_path', 'checkpoint_dir', 'tensorboard_dir',
                 'tensorboard_loss_period', 'progress_interval_seconds',
                 'environment_name', 'seed', 'num_iterations')
RUN_JSON = run_json.FILE_NAME

IN_RANGE, BELOW, ABOVE = 'in range', 'BELOW', 'ABOVE'
NO_COUNTERPART = 'no published eval at this frame'
PARTIAL = 'partial return (0 episodes)'
MISSING = 'no return'


def define_flags() -> None:
  """Define the flags of this entry point (only when run as a program)."""
  flags.DEFINE_multi_string(
      'runs', [], 'Our runs: a directory tree of run CSVs or one CSV file, as '
      'PATH or LABEL=PATH; a LABEL naming a published variant (' +
      ', '.join(VARIANTS) + ') fixes the variant. Repeatable.')
  flags.DEFINE_string(
      'plot', None, 'Also draw the comparison into this .png or .pdf file.')
  run_data.define_suite_flag()


@dataclasses.dataclass
class Resolution:
  """Which published variant a run is compared with, and why."""
  variant: Optional[Variant]
  how: str                       # One line for the output.
  settings: Optional[Dict[str, Any]] = None  # From run.json, if any.


def _setting_matches(value, wanted) -> bool:
  if isinstance(wanted, float):
    try:
      return math.isclose(float(value), wanted)
    except (TypeError, ValueError):
      return False
  return value == wanted


def resolve_variant(run: run_data.Run, label: Optional[str]) -> Resolution:
  """Return the published variant to compare `run` with (None: there is none)."""
  if run.suite != 'atari':
    return Resolution(None, 'a MinAtar run: no published Atari curves'
                      if run.suite == 'minatar' else
                      f'no {RUN_JSON} records its suite; {run_data.SUITE_FIX}')
  # run_data names a run with a run.json by its preset: its package runs it.
  package = _PRESETS[run.agent].package if run.agent in _PRESETS else run.agent
  json_path = run_json.path_next_to(run.path)
  try:
    data, note = run_json.read(json_path), ''
  except (OSError, ValueError) as e:
    data, note = None, f'{RUN_JSON} ignored: {e}'
  if data is not None and (
      data.get('agent') != package or
      data['settings'].get('seed', run.seed) != run.seed or
      data['settings'].get('environment_name', run.game) != run.game):
    note = (f'{RUN_JSON} beside {run.path} describes another run '
            f'({data.get("agent")}, seed {data["settings"].get("seed")}); '
            'ignored')
    data = None
  settings = data['settings'] if data else None
  suffix = f'; {note}' if note else ''
  if label in VARIANTS:
    variant = VARIANTS[label]
    if variant.package != package:
      raise ValueError(
          f'--runs label {label!r} is a {variant.package} variant, but '
          f'{run.path} is a {package} run; label it with one of '
          f'{[v.name for v in VARIANTS.values() if v.package == package]}.')
    conflicts = [f'{name}={settings[name]}' for name, wanted
                 in variant.settings.items() if settings and name in settings
                 and not _setting_matches(settings[name], wanted)]
    if conflicts:
      suffix += f'; its {RUN_JSON} says {", ".join(conflicts)}'
    return Resolution(variant, f'from the --runs label{suffix}', settings)
  if package not in PACKAGE_DEFAULTS:
    return Resolution(None, f'agent {package!r} has no published variant '
                      f'(ours: {", ".join(PACKAGE_DEFAULTS)})', settings)
  if settings is not None:
    for variant in VARIANTS.values():
      if variant.package == package and all(
          name not in settings or _setting_matches(settings[name], wanted)
          for name, wanted in variant.settings.items()):
        return Resolution(variant, f'from {RUN_JSON}{suffix}', settings)
    shown = {k: settings.get(k) for k in ('head', 'loss', 'huber_param',
                                          'scale_grad', 'nc_scale_activation')}
    return Resolution(None, f'{RUN_JSON} settings {shown} match no published '
                      'variant', settings)
  label_note = (f'; label {label!r} names no published variant'
                if label and label != 'ours' else '')
  if sum(v.package == package for v in VARIANTS.values()) == 1:
    how = f'the only published {package} variant (no {RUN_JSON} to check)'
  else:
    how = (f'assumed to be the {package} default (no {RUN_JSON}; pass '
           '--runs=LABEL=DIR to choose)')
  return Resolution(VARIANTS[PACKAGE_DEFAULTS[package]],
                    f'{how}{label_note}{suffix}')


def protocol_differences(run: run_data.Run, resolution: Resolution
                         ) -> List[str]:
  """Return 'name=ours (published)' for run.json settings off the protocol."""
  if resolution.settings is None or resolution.variant is None:
    return []
  # Imported here: only runs with a run.json need the run defaults (JAX).
  # pylint: disable=g-import-not-at-top
  from zoo.suites import atari_suite
  from zoo.configuration import settings as settings_lib
  # optimizer_epsilon: None derives it from the variant.
  defaults = dict(settings_lib.default_settings(atari_suite.ATARI),
                  **resolution.variant.settings, results_csv_path='',
                  checkpoint_dir='', optimizer_epsilon=None)
  published = settings_lib.resolve_settings(
      atari_suite.ATARI, _PRESETS[resolution.variant.name], defaults).as_dict()
  ours = resolution.settings
  return [f'{name}={ours[name]} ({published[name]})'
          for name in sorted(published)
          if name not in _NOT_PROTOCOL and name in ours
          and not _setting_matches(ours[name], published[name])]


@dataclasses.dataclass
class Row:
  """One iteration of one run beside the published seeds."""
  iteration: int
  frame: float
  ours: float
  episodes: float           # NaN: unknown.
  low: float = math.nan     # Over the published seeds at this frame.
  mean: float = math.nan
  high: float = math.nan
  num_seeds: int = 0
  mark: str = NO_COUNTERPART


def published_at(published: Sequence[run_data.Run]
                 ) -> Dict[float, np.ndarray]:
  """Return {frame: eval returns of the seeds evaluated at that frame}."""
  values: Dict[float, List[float]] = {}
  for run in published:
    for frame, value in zip(run.frame, run.eval_return):
      if np.isfinite(value):
        values.setdefault(float(frame), []).append(float(value))
  return {frame: np.array(v) for frame, v in values.items()}


def compare_run(run: run_data.Run, published: Sequence[run_data.Run]
                ) -> List[Row]:
  """Return one Row per iteration of `run`, against `published` (same game)."""
  by_frame = published_at(published)
  episodes = (run.eval_num_episodes if run.eval_num_episodes is not None
              else np.full(run.iteration.shape, np.nan))
  rows = []
  for iteration, frame, value, count in zip(run.iteration, run.frame,
                                            run.eval_return, episodes):
    row = Row(int(iteration), float(frame), float(value), float(count))
    seeds = by_frame.get(float(frame))
    if seeds is not None:
      row.low, row.mean, row.high = seeds.min(), seeds.mean(), seeds.max()
      row.num_seeds = len(seeds)
      row.mark = (PARTIAL if count == 0 else MISSING if not np.isfinite(value)
                  else BELOW if value < row.low else ABOVE if value > row.high
                  else IN_RANGE)
    elif count == 0:
      row.mark = f'{NO_COUNTERPART}; {PARTIAL}'
    rows.append(row)
  return rows


@dataclasses.dataclass
class Comparison:
  """A run, the variant it is compared with, and its rows (empty: none)."""
  run: run_data.Run  # Its source is its --runs label.
  resolution: Resolution
  published: List[run_data.Run]
  rows: List[Row]
  note: str = ''        # Why there are no rows, if so.
  differences: List[str] = dataclasses.field(default_factory=list)


def compare_all(runs: Sequence[run_data.Run],
                references: Optional[Sequence[run_data.Run]] = None
                ) -> List[Comparison]:
  """Compare every run with its published variant (its source: its label).

  `references` defaults to the shipped reference files the variants need.
  """
  resolutions = [resolve_variant(run, run.source) for run in runs]
  if references is None:
    references = []
    # DQN Zoo's file is large: load only what the runs need.
    for name in sorted({r.variant.source for r in resolutions if r.variant}):
      references.extend(run_data.load_reference(name))
  index: Dict[Tuple[str, str, str], List[run_data.Run]] = {}
  for ref in references:
    index.setdefault((ref.source, ref.agent, ref.game), []).append(ref)
  out = []
  for run, resolution in zip(runs, resolutions):
    variant = resolution.variant
    if variant is None:
      out.append(Comparison(run, resolution, [], [], note=resolution.how))
      continue
    published = index.get((variant.source, variant.reference_agent, run.game),
                          [])
    note = ''
    if not published:
      games = sorted({g for s, a, g in index
                      if (s, a) == (variant.source, variant.reference_agent)})
      note = (f'no published {variant.name} runs on {run.game} (published '
              f'games: {", ".join(games) or "none"})')
    out.append(Comparison(
        run, resolution, published,
        compare_run(run, published) if published else [], note=note,
        differences=protocol_differences(run, resolution)))
  return out


def _number(value: float, width: int, digits: int = 2) -> str:
  return f'{value:{width}.{digits}f}' if np.isfinite(value) else (
      '–'.rjust(width))


def format_comparison(c: Comparison) -> str:
  """Return the text block of one run."""
  run = c.run
  source = '' if run.source == 'ours' else f' [{run.source}]'
  lines = [f'{run.agent} on {run.game}, seed {run.seed}{source}: {run.path}']
  variant = c.resolution.variant
  if variant is not None:
    seeds = len({r.seed for r in c.published})
    where = 'paper runs' if variant.source == 'paper' else (
        f"DQN Zoo's {variant.reference_agent}")
    lines.append(f'  published: {variant.name} ({where}, {seeds} seeds); '
                 f'variant: {c.resolution.how}.')
  if c.differences:
    lines.append('  settings off the published protocol, ours (published): ' +
                 ', '.join(c.differences) + '.')
  if not c.rows:  # No variant, or no published runs of its game.
    lines.append(f'  not compared: {c.note}.')
    return '\n'.join(lines)
  lines.append(f'  {"iteration":>9} {"frame":>12} {"ours":>9} {"episodes":>8}'
               f' {"pub. min":>9} {"mean":>9} {"max":>9} {"seeds":>5}  mark')
  for row in c.rows:
    lines.append(
        f'  {row.iteration:9d} {row.frame:12,.0f} {_number(row.ours, 9)} '
        f'{_number(row.episodes, 8, 0)} {_number(row.low, 9)} '
        f'{_number(row.mean, 9)} {_number(row.high, 9)} '
        f'{row.num_seeds or "–":>5}  {row.mark}')
  compared = [r for r in c.rows if r.mark in (IN_RANGE, BELOW, ABOVE)]
  count = collections.Counter(r.mark for r in compared)
  summary = (f'  {len(c.rows)} iterations, {len(compared)} compared: '
             f'{count[IN_RANGE]} in range, {count[BELOW]} below, '
             f'{count[ABOVE]} above.')
  if compared:
    n = min(r.num_seeds for r in compared)
    # An exchangeable new seed is the lowest or highest of n + 1: 2 / (n + 1).
    summary += (f' A new seed of the same agent falls outside {n} published '
                f'seeds\' range at {2 / (n + 1):.0%} of iterations by chance.')
  lines.append(summary)
  if any(r.mark.startswith(NO_COUNTERPART) for r in c.rows):
    frames = sorted(published_at(c.published))
    if len(frames) > 1:
      lines.append(f'  The published runs evaluate every '
                   f'{frames[1] - frames[0]:,.0f} frames; iterations at other '
                   'frames have no counterpart.')
  return '\n'.join(lines)


def plot(comparisons: Sequence[Comparison], path: str) -> str:
  """Draw every compared run beside its published seeds into `path`."""
  # pylint: disable=g-import-not-at-top
  from scripts.analysis import plot_curves  # Imports matplotlib.
  shown = [c for c in comparisons if c.rows]
  if not shown:
    raise ValueError('Nothing to plot: no run has published curves.')
  fig, axes = plot_curves.panels(len(shown), min(3, len(shown)), 4.5, 3.2)
  for ax, c in zip(axes, shown):
    last = float(np.nanmax(c.run.frame))
    by_frame = published_at(c.published)
    frames = sorted(by_frame)
    # The published evaluations up to the first one at or after our last.
    keep = [f for f in frames if f <= last] + [f for f in frames if f > last][:1]
    name = c.resolution.variant.name
    plot_curves.band(
        ax, np.array(keep) / 1e6, [by_frame[f].mean() for f in keep],
        [by_frame[f].min() for f in keep], [by_frame[f].max() for f in keep],
        color=plot_curves.color(0), linestyle='--', linewidth=1.2, marker='.',
        label=f'{name} published: mean, min–max band')
    ax.plot(c.run.frame / 1e6, c.run.eval_return, color=plot_curves.color(4),
            linewidth=2.0, marker='o', markersize=3, label='ours')
    outside = [r for r in c.rows if r.mark in (BELOW, ABOVE)]
    if outside:
      ax.plot([r.frame / 1e6 for r in outside], [r.ours for r in outside],
              linestyle='none', marker='o', markersize=8, markerfacecolor='none',
              color=plot_curves.color(5), label='outside the published range')
    ax.set_title(f'{c.run.game}: {c.run.agent} seed {c.run.seed} vs {name}',
                 fontsize=9)
    ax.set_xlabel('frames (millions)', fontsize=8)
    ax.set_ylabel('evaluation return', fontsize=8)
    ax.tick_params(labelsize=7)
    ax.grid(alpha=0.3)
    ax.legend(fontsize=6)
  fig.tight_layout()
  return plot_curves.save(fig, path)[0]


def check_arguments(runs: Sequence[str], plot_path: Optional[str]) -> None:
  """Raise ValueError naming a bad argument, before any work."""
  if not runs:
    raise ValueError('Pass --runs=PATH (a directory of run CSVs or a CSV '
                     'file, e.g. a results session\'s '
                     'evidence/sessions/ID/runs), repeatable.')
  run_data.check_runs_args(runs)
  if plot_path:
    if os.path.splitext(plot_path)[1] not in ('.png', '.pdf'):
      raise ValueError(f'--plot: {plot_path!r} must end in .png or .pdf.')
    directory = os.path.dirname(os.path.abspath(plot_path))
    try:
      files.make_writable_directory(directory)
    except OSError as e:
      raise ValueError(f'--plot: cannot write in {directory!r} ({e}).') from e


def main(unused_argv):
  try:
    check_arguments(FLAGS.runs, FLAGS.plot)
    runs = run_data.load_runs_args(FLAGS.runs, FLAGS.suite)
    comparisons = compare_all(run_data.check_unique(runs))
  except ValueError as e:
    sys.exit(f'Error: {e}')
  print('\n\n'.join(format_comparison(c) for c in comparisons))
  if FLAGS.plot:
    try:
      print(f'\nwrote {plot(comparisons, FLAGS.plot)}')
    except ValueError as e:
      print(f'\nno plot: {e}', file=sys.stderr)


if __name__ == '__main__':
  define_flags()
  cli.run(main)
