"""Marked blocks in hand-written pages: only the text between a block's markers is replaced,
and a page whose markers are broken is refused with the project's error."""

from __future__ import annotations

import pytest

from sroa_dist.analysis.published.blocks import blocks, splice
from sroa_dist.errors import InputError

PAGE = """# Title

Prose before.

<!-- results:one -->
old one
<!-- /results:one -->

Prose between.
<!-- results:two -->
old two
<!-- /results:two -->
Prose after.
"""


def test_splice_replaces_only_the_named_blocks():
    out = splice(PAGE, {"one": "new one\nsecond line"}, "page.md")
    assert blocks(out) == {"one": "new one\nsecond line\n", "two": "old two\n"}
    assert out.replace("new one\nsecond line\n", "old one\n") == PAGE
    assert splice(out, {"one": "old one\n"}) == PAGE


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("<!-- results:a -->\nx\n", "block 'a' is never closed"),
        ("<!-- /results:a -->\n", "closes no open block"),
        ("<!-- results:a -->\n<!-- results:b -->\n", "opens inside block 'a'"),
        ("<!-- results:a -->\n<!-- /results:a -->\n<!-- results:a -->\n<!-- /results:a -->\n",
         "appears twice"),
    ],
)  # fmt: skip
def test_broken_markers_are_refused_naming_the_page(text, says):
    with pytest.raises(InputError, match=says) as err:
        blocks(text, "docs/results/x.md")
    assert "docs/results/x.md" in str(err.value)


def test_a_block_the_page_does_not_mark_is_refused():
    with pytest.raises(InputError, match="no marked block for three"):
        splice(PAGE, {"three": "x\n"}, "page.md")
