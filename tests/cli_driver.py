"""Run one command-line tool over several argument lists in one process.

  python -m tests.cli_driver MODULE CASES_JSON OUT_JSON

CASES_JSON is a JSON list of argument lists. For each, the tool's flags are
reset and `zoo.configuration.cli.run(main, argv)` runs as `python -m MODULE
ARGS` would, with the file descriptors 1 and 2 captured; a SystemExit or an
uncaught exception is handled as the interpreter would at exit (a message to
stderr, exit status 1; a traceback). OUT_JSON receives [{"returncode",
"stdout", "stderr"}] per case. The import of the tool (JAX's, for some) is
paid once for all cases.
"""

import importlib
import json
import os
import sys
import tempfile
import traceback


def _run_case(cli, flags, main, argv):
  """Return (exit status, stdout, stderr) of one case."""
  flags.FLAGS.unparse_flags()
  sys.stdout.flush()
  sys.stderr.flush()
  saved = os.dup(1), os.dup(2)
  with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
    os.dup2(out.fileno(), 1)
    os.dup2(err.fileno(), 2)
    code = 0
    try:
      try:
        cli.run(main, argv)
      except SystemExit as e:
        if isinstance(e.code, str):
          print(e.code, file=sys.stderr)
          code = 1
        else:
          code = e.code or 0
      except BaseException:  # pylint: disable=broad-except
        traceback.print_exc()
        code = 1
    finally:
      sys.stdout.flush()
      sys.stderr.flush()
      os.dup2(saved[0], 1)
      os.dup2(saved[1], 2)
      os.close(saved[0])
      os.close(saved[1])
    texts = []
    for f in (out, err):
      f.seek(0)
      texts.append(f.read().decode('utf-8', 'replace'))
  return code, texts[0], texts[1]


def main():
  module_name, cases_json, out_path = sys.argv[1:4]
  # pylint: disable=g-import-not-at-top
  from zoo.configuration import cli
  from absl import flags
  module = importlib.import_module(module_name)
  module.define_flags()
  results = []
  for args in json.loads(cases_json):
    code, out, err = _run_case(cli, flags, module.main, [module_name] + args)
    results.append({'returncode': code, 'stdout': out, 'stderr': err})
  with open(out_path, 'w') as f:
    json.dump(results, f)


if __name__ == '__main__':
  main()
