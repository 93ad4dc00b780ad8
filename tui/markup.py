"""Text the TUI did not write (an agent's code and logs, server replies, names from a sweep file) placed inside
Textual markup so that it shows exactly as it is.

Rich's `escape` is not enough for Textual's own markup parser: a `[` that opens no tag (`"x": [` at a line's
end) is read up to the next line's tag and raises, and backslashes before a bracket come out doubled. Every
string from outside the TUI goes through `literal` before it joins a markup string.
"""

from __future__ import annotations


def literal(text: str) -> str:
    """`text` as it is, inside Textual markup: every `[` escaped, and a trailing backslash kept off the tag that
    follows it."""
    text = text.replace("[", "\\[")
    return text + " " if text.endswith("\\") else text


__all__ = ["literal"]
