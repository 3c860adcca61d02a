"""What the web page makes of a submission's text (runner.web.candidates): each diff line with its
class and its control characters escaped before the template's autoescape. Pure logic."""

from __future__ import annotations

from kcoral.runner.web import candidates


def test_diff_lines_get_their_class_and_are_escaped() -> None:
    rows = candidates.diff_rows("--- a/s.py\n+++ b/s.py\n@@ -1 +1 @@\n-x\n+<b>\x1b[2J\u202e</b>\n context\n")
    assert [cls for cls, _ in rows] == ["del", "add", "hunk", "del", "add", ""]
    assert rows[4][1] == "+<b>\\x1b[2J\\u202e</b>"  # the template's autoescape makes the tags text
