"""``report.html``: the run's evidence as one page a browser opens from the artifact.

Written beside ``report.json`` by every command that writes a report directory (``run``,
``publish --junit``, ``merge``), from the same ``RunReport``; it needs no server, no
network and no other file.
"""

from __future__ import annotations

from pathlib import Path
from typing import Optional

from flakewarden.model import RunReport
from flakewarden.reports.html.page import asset, render_page
from flakewarden.reports.html.report_data import report_data, run_state

REPORT_HTML = "report.html"
_ASSETS = "flakewarden.reports.html"

#: The page's fixed markup; the script fills each part from the data.
BODY = """\
<header id="head" class="head"></header>
<main>
<noscript><p class="notice">This page draws the report with JavaScript. report.json,
junit.xml and summary.md beside it hold the same evidence.</p></noscript>
<section id="problems" hidden></section>
<section id="totals" aria-label="Totals"></section>
<section id="causes" hidden></section>
<section id="tests-section">
<h2>Tests</h2>
<div class="controls">
<label>Filter <input id="filter" type="search" autocomplete="off"
 placeholder="part of a test id or a failure message"></label>
<span id="outcomes" class="chips" role="group" aria-label="Outcomes shown"></span>
<span id="shown" class="muted"></span>
</div>
<table id="tests" class="tests">
<thead><tr id="columns"></tr></thead>
<tbody id="rows"></tbody>
</table>
<p><button id="more" type="button" hidden>Show more</button></p>
</section>
<section id="coverage" hidden></section>
<section id="commands"></section>
</main>"""


SCRIPTS = ("dom.js", "report.js")
STYLES = ("base.css",)


def load_assets() -> None:
    """Read the page's scripts and style into ``asset``'s cache.

    ``flakewarden run`` calls it while the tests run, so the page's files are not read on
    the way from the last test to the written reports.
    """
    for name in (*SCRIPTS, *STYLES):
        asset(_ASSETS, name)


def render_report_html(report: RunReport, report_dir: Optional[Path] = None) -> str:
    """The page for ``report``; ``report_dir`` is read for per-file coverage when measured."""
    return render_page(
        title=f"flakewarden: {run_state(report)}",
        data=report_data(report, report_dir),
        script=[asset(_ASSETS, name) for name in SCRIPTS],
        style=[asset(_ASSETS, name) for name in STYLES],
        body=BODY,
    )
