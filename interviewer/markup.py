"""Showing what a person typed as text, in the browser and in Markdown exports alike."""

from __future__ import annotations

import html
import re

_MD_SPECIAL = re.compile(r"([\\`*_{}\[\]()#+!|>~-])")


def escape_markdown(text: str) -> str:
    """No HTML, no Markdown tricks: the text reads the same and nothing in it renders or runs."""
    return _MD_SPECIAL.sub(r"\\\1", html.escape(text, quote=False))
