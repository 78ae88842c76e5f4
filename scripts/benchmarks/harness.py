"""The benchmarks' one harness: variants measured in interleaved rounds, their
medians, a markdown table, and the last line, `figures: <JSON list>`."""

import json
import numbers
import os
import resource
import statistics
import time
from typing import (Any, Callable, Dict, Iterable, List, Mapping, NamedTuple,
                    Optional, Sequence, Tuple, Union)

from absl import flags
import jax

from scripts.analysis import minatar_report
from scripts.analysis import tables

FIGURES_PREFIX = 'figures: '
VALUE = 'value'  # The quantity of a variant whose round returns one number.
Round = Union[float, Mapping[str, float]]
Results = Dict[str, Dict[str, List[float]]]


def define_flags(repeats: int, timing_repeats: int = 0) -> None:
  """Define --repeats (the rounds) and, if timing_repeats, --timing_repeats,
  with this benchmark's defaults (only when run)."""
  flags.DEFINE_integer('repeats', repeats, 'Rounds; each measures every '
                       'variant once, in turn (medians of the rounds).',
                       lower_bound=1)
  if timing_repeats:
    flags.DEFINE_integer('timing_repeats', timing_repeats, 'Timed calls per '
                         'part per round (median).', lower_bound=1)


def define_choices(name: str, default: Sequence[str],
                   choices: Sequence[str], help_text: str,
                   flag_values: flags.FlagValues = flags.FLAGS) -> None:
  """Define a list flag of some of `choices`, each once; parsing refuses
  any other list."""
  listed = ','.join(choices)
  flags.DEFINE_list(name, list(default), f'{help_text} (of {listed}).',
                    flag_values=flag_values)
  flags.register_validator(
      name, lambda values: (bool(values) and set(values) <= set(choices)
                            and len(set(values)) == len(values)),
      f'name one or more of {listed}, each once, separated by commas.',
      flag_values=flag_values)


def machine() -> str:
  """Return the CPU, its cores, the load average (is the machine shared?),
  the jax version and JAX's device."""
  load = ', '.join(f'{x:.1f}' for x in os.getloadavg())
  return (f'{minatar_report.cpu_description()}, load average {load}; jax '
          f'{jax.__version__}, device {jax.devices()[0]}')


def rss_bytes() -> int:
  """Return this process's resident memory, in bytes."""
  with open('/proc/self/statm') as f:
    return int(f.read().split()[1]) * resource.getpagesize()


def median_ms(fn: Callable[[], Any], repeats: int) -> float:
  """Return the median wall time of `repeats` calls of fn, in milliseconds.

  Each call's result is waited for (jax.block_until_ready), so asynchronous
  JAX dispatch is timed to its end; numpy results pass through unchanged.
  """
  if repeats < 1:
    raise ValueError(f'repeats must be positive, got {repeats}.')
  return statistics.median(timed(fn)() for _ in range(repeats))


def timed(fn: Callable[[], Any], calls: int = 1) -> Callable[[], float]:
  """Return a variant's round: `calls` calls of fn, the last result waited
  for; its value, the milliseconds per call."""
  def round_ms() -> float:
    start = time.perf_counter()
    for _ in range(calls):
      out = fn()
    jax.block_until_ready(out)
    return 1e3 * (time.perf_counter() - start) / calls
  return round_ms


def say(line: str) -> None:
  """Print a line of progress now."""
  print(line, flush=True)


def ready(name: str, make: Callable[[], Any]) -> Any:
  """Return make()'s variant (built and warmed up); say how long it took."""
  start = time.perf_counter()
  variant = make()
  say(f'{name}: ready (built and warmed up) in '
      f'{time.perf_counter() - start:.0f} s')
  return variant


def measure(variants: Mapping[str, Callable[[], Round]], rounds: int,
            say: Optional[Callable[[str], None]] = say,
            before_round: Callable[[int], Any] = lambda r: None) -> Results:
  """Measure every variant once per round, in turns; return its values.

  A variant is a name and a zero-argument callable: one measurement, a number
  or {quantity: number} (the same quantities every round). Round r starts at
  the r-th variant and goes round: drift and outside load hit every variant
  alike, and none always follows the same one. say: told each round's first
  quantities (None: silent); before_round(r): untimed work that round r
  needs first (e.g. new data). Returns {variant: {quantity: [value per
  round]}}.
  """
  if rounds < 1:
    raise ValueError(f'rounds must be positive, got {rounds}: set '
                     '--repeats >= 1.')
  if not variants:
    raise ValueError('no variants to measure: give at least one.')
  names = list(variants)
  results: Results = {name: {} for name in names}
  for r in range(rounds):
    before_round(r)
    for i in range(len(names)):
      name = names[(r + i) % len(names)]
      got = variants[name]()
      got = dict(got) if isinstance(got, Mapping) else {VALUE: got}
      if r and set(got) != set(results[name]):
        raise ValueError(f'variant {name!r} measured {sorted(got)} in round '
                         f'{r + 1}, {sorted(results[name])} before: return '
                         'the same quantities every round.')
      for quantity, value in got.items():
        if not isinstance(value, numbers.Real):
          raise TypeError(f'variant {name!r}: {quantity} is {value!r}; '
                          'return numbers.')
        results[name].setdefault(quantity, []).append(float(value))
    if say:
      say(f'round {r + 1}/{rounds}: ' + ', '.join(
          f'{name} {next(iter(results[name].values()))[-1]:.4g}'
          for name in names))
  return results


class Stats(NamedTuple):
  median: float
  low: float
  high: float


def summary(results: Results) -> Dict[str, Dict[str, Stats]]:
  """Return the median, min and max over the rounds of every quantity."""
  return {name: {q: Stats(statistics.median(v), min(v), max(v))
                 for q, v in quantities.items()}
          for name, quantities in results.items()}


def medians(results: Results) -> Dict[str, Dict[str, float]]:
  """Return the median over the rounds of every quantity."""
  return {name: {q: s.median for q, s in stats.items()}
          for name, stats in summary(results).items()}


def print_table(header: Sequence[str], rows: Iterable[Sequence],
                align: str = '') -> None:
  """Print a blank line, then a markdown table (scripts.analysis.tables)."""
  print('\n' + '\n'.join(tables.markdown(header, rows, align)), flush=True)


def report(prefix: str, context: str, names: Sequence[str],
           columns: Mapping[str, Tuple[str, str]],
           rows: Mapping[Any, Mapping[str, str]],
           align: str = '') -> List[Dict[str, str]]:
  """Print the table of rows; return a figure per cell.

  names: the headers of a row's name (its key, a string or a tuple of as
  many). columns: {header: (quantity, unit)}, quantity '' for a column
  without figures. rows: {name: {header: cell as printed}}. A cell's figure
  has the key `prefix.quantity:name` (name parts joined by ':', spaces by
  '_'), the cell as its value ('%' and a ' [min, max]' tail cut); cells '-'
  and '' have none.
  """
  keys = {name: (name,) if isinstance(name, str) else tuple(name)
          for name in rows}
  for name, key in keys.items():
    if len(key) != len(names) or set(rows[name]) != set(columns):
      raise ValueError(f'row {name!r}: give {len(names)} name part(s) and '
                       f'the cells of {list(columns)}.')
  print_table(list(names) + list(columns),
              [list(keys[n]) + [rows[n][c] for c in columns] for n in rows],
              align)
  out = []
  for name, row in rows.items():
    suffix = ':'.join(str(p) for p in keys[name]).replace(' ', '_')
    for header, (quantity, unit) in columns.items():
      cell = str(row[header]).split(' [')[0].rstrip('%x')
      if quantity and cell not in ('-', ''):
        out.append(figure(f'{prefix}.{quantity}:{suffix}',
                          f'{context}, {" ".join(map(str, keys[name]))}: '
                          f'{header} (median of the rounds)', cell, unit))
  return out


def figure(key: str, what: str, value: str, unit: str) -> Dict[str, str]:
  """Return one figure: its key, what it measures, its value as the table
  prints it, and its unit ('' for none)."""
  for name, field in zip(('key', 'what', 'value', 'unit'),
                         (key, what, value, unit)):
    if not isinstance(field, str):
      raise TypeError(f'figure {key!r}: {name} must be a string (the '
                      f'value as printed), got {field!r}.')
  if not key or not what:
    raise ValueError(f'figure {key!r}: give a key and a what.')
  return {'key': key, 'what': what, 'value': value, 'unit': unit}


def print_figures(figures: Iterable[Dict[str, str]]) -> None:
  """Print a benchmark's last line, `figures: <JSON list>`; keys must be
  unique."""
  figures = list(figures)
  keys = [f['key'] for f in figures]
  repeated = sorted({k for k in keys if keys.count(k) > 1})
  if repeated:
    raise ValueError(f'figure keys {repeated} repeat: give each figure its '
                     'own key.')
  print(FIGURES_PREFIX + json.dumps(figures), flush=True)


def read_figures(output: str) -> List[Dict[str, str]]:
  """Return the figures of a benchmark's output, read from its last line."""
  lines = output.rstrip('\n').splitlines()
  if not lines or not lines[-1].startswith(FIGURES_PREFIX):
    raise ValueError('the output does not end with a `figures: ` line: run '
                     'the benchmark to its end.')
  return json.loads(lines[-1][len(FIGURES_PREFIX):])
