"""Tests for scripts.analysis.docs_results: the pages' result blocks."""

import os

import pytest

from scripts.analysis import docs_results

PAGE = """# A page

<!-- results: python -m scripts.analysis.fake --x=1 -->
| old | table |
<!-- end results -->

Text between.

<!-- results: python -m scripts.analysis.fake --x=2 -->
<!-- end results -->
"""


def fake_runner(argv):
  return f'\n| output of | {argv[3]} |\n\n'


def test_blocks_are_found_with_their_commands_and_shown_output():
  blocks = docs_results.find_blocks('page.md', PAGE)
  assert [(b.line, b.command, b.shown) for b in blocks] == [
      (3, 'python -m scripts.analysis.fake --x=1', '| old | table |\n'),
      (9, 'python -m scripts.analysis.fake --x=2', '')]


def test_rewrite_puts_each_commands_output_in_its_block_only():
  new, stale = docs_results.rewrite(PAGE, 'page.md', fake_runner)
  assert new == PAGE.replace('| old | table |\n',
                             '| output of | --x=1 |\n').replace(
      '--x=2 -->\n', '--x=2 -->\n| output of | --x=2 |\n')
  assert [b.line for b in stale] == [3, 9]
  assert docs_results.rewrite(new, 'page.md', fake_runner) == (new, [])


def test_stale_blocks_are_named_and_written(tmp_path):
  os.makedirs(tmp_path / 'docs' / 'sub')
  (tmp_path / 'README.md').write_text('no blocks\n')
  (tmp_path / 'docs' / 'sub' / 'p.md').write_text(PAGE)
  page = os.path.join('docs', 'sub', 'p.md')
  for write in (False, True):
    stale = docs_results.update(str(tmp_path), fake_runner, write)
    assert [(b.path, b.line) for b in stale] == [(page, 3), (page, 9)]
  assert (tmp_path / page).read_text() == docs_results.rewrite(
      PAGE, page, fake_runner)[0]
  assert not docs_results.update(str(tmp_path), fake_runner)


@pytest.mark.parametrize('text, message', [
    ('<!-- results: rm -rf / -->\n<!-- end results -->\n',
     'page.md:1: .*python -m scripts.analysis.MODULE'),
    ('<!-- results: python -m scripts.campaign --x -->\n',
     'scripts.analysis.MODULE'),
    ('<!-- results: python -m scripts.analysis.a -->\nrow\n',
     'page.md:1: .*not closed'),
    ('row\n<!-- end results -->\n', 'page.md:2: .*without a start'),
    ('<!-- results: python -m scripts.analysis.a -->\n'
     '<!-- results: python -m scripts.analysis.b -->\n', 'inside'),
])
def test_malformed_blocks_are_refused_with_the_fix(text, message):
  with pytest.raises(ValueError, match=message):
    docs_results.find_blocks('page.md', text)


def test_a_failing_command_is_reported():
  with pytest.raises(ValueError, match='failed'):
    docs_results.run_command(['python', '-m', 'scripts.analysis.no_such'])


def test_every_result_block_of_the_docs_is_what_committed_results_give():
  blocks = [b for name in docs_results.markdown_files()
            for b in docs_results.find_blocks(
                name, open(os.path.join(docs_results.REPO, name),
                           encoding='utf-8').read())]
  assert blocks, 'the README and pages hold result blocks'
  stale = docs_results.update()
  assert not stale, (
      'Stale result blocks: '
      + ', '.join(f'{b.path}:{b.line}' for b in stale)
      + '. Run python -m scripts.analysis.docs_results --write and review.')
