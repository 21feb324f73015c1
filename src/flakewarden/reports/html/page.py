"""One self-contained HTML page: data as inert JSON, scripts and styles allowed by hash.

Nothing a test, a message or an output holds reaches the markup: the data goes into a
``<script type="application/json">`` block with ``<``, ``>``, ``&`` and the two JavaScript
line separators escaped, so no text can close the block, and the page's own script reads
it with ``JSON.parse`` and draws it with ``textContent``. The Content-Security-Policy
allows only the page's own inline script and style, by their SHA-256, and no network
request of any kind; a ``<script>`` that got in anyway would not run.
"""

from __future__ import annotations

import base64
import functools
import hashlib
import html
import json
from collections.abc import Sequence
from importlib import resources
from typing import Any

#: What a page may do: run its own script, apply its own style, show ``data:`` images.
POLICY = (
    "default-src 'none'; script-src {scripts}; style-src {styles}; img-src data:; "
    "base-uri 'none'; form-action 'none'"
)
_ESCAPES = {
    "<": "\\u003c",
    ">": "\\u003e",
    "&": "\\u0026",
    "\u2028": "\\u2028",
    "\u2029": "\\u2029",
}
_encode = json.JSONEncoder(ensure_ascii=False, separators=(",", ":")).encode


def script_json(data: Any) -> str:
    """``data`` as JSON that is safe inside ``<script type="application/json">``.

    The escaped characters only ever occur inside JSON strings, where ``\\uXXXX`` reads
    back as the same character: ``JSON.parse`` gives ``data`` unchanged.
    """
    text = _encode(data)
    for char, escaped in _ESCAPES.items():
        if char in text:
            text = text.replace(char, escaped)
    return text


@functools.cache
def asset(package: str, name: str) -> str:
    """A script or style shipped in ``package``'s ``assets`` folder."""
    return resources.files(package).joinpath("assets").joinpath(name).read_text(encoding="utf-8")


def digest(text: str) -> str:
    """The CSP source expression allowing exactly this inline block."""
    raw = hashlib.sha256(text.encode("utf-8")).digest()
    return "'sha256-" + base64.b64encode(raw).decode("ascii") + "'"


def render_page(
    *, title: str, data: Any, script: Sequence[str], style: Sequence[str], body: str
) -> str:
    """The page: ``body`` (static markup, never data) filled by ``script`` from ``data``."""
    code = "\n".join(script)
    css = "\n".join(style)
    for block, tag in ((code, "</script"), (css, "</style")):
        if tag in block.lower():
            raise ValueError(f"an inline block holds {tag}")
    policy = POLICY.format(scripts=digest(code), styles=digest(css))
    return (
        "<!DOCTYPE html>\n"
        '<html lang="en">\n<head>\n<meta charset="utf-8">\n'
        f'<meta http-equiv="Content-Security-Policy" content="{policy}">\n'
        '<meta name="referrer" content="no-referrer">\n'
        '<meta name="viewport" content="width=device-width, initial-scale=1">\n'
        f"<title>{html.escape(title)}</title>\n"
        f"<style>{css}</style>\n</head>\n<body>\n{body}\n"
        f'<script type="application/json" id="fw-data">{script_json(data)}</script>\n'
        f"<script>{code}</script>\n</body>\n</html>\n"
    )
