"""Writing the dashboard: one self-contained ``index.html`` in the output directory.

It opens from ``file://``, from a downloaded artifact, or from GitHub Pages: no server,
no request. The output directory is created when absent; ``index.html`` is replaced in
one rename, and nothing else in the directory is touched.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from flakewarden.reports.html.page import asset, render_page
from flakewarden.reports.report_json import write_text_atomic

INDEX = "index.html"
_ASSETS = "flakewarden.reports.html"

BODY = """\
<header id="head" class="head"></header>
<main>
<noscript><p class="notice">This page draws the dashboard with JavaScript.</p></noscript>
<section id="overview"></section>
<section id="chart-section"><h2>Flaky runs per week</h2><div id="chart"></div></section>
<section id="tests-section">
<h2>Flakiest tests</h2>
<p id="tests-note" class="muted"></p>
<div class="controls">
<label>Filter <input id="filter" type="search" autocomplete="off"
 placeholder="part of a test id"></label>
<span id="states" class="chips" role="group" aria-label="States shown"></span>
<span id="shown" class="muted"></span>
</div>
<table id="tests" class="tests">
<thead><tr id="columns"></tr></thead>
<tbody id="rows"></tbody>
</table>
<p><button id="more" type="button" hidden>Show more</button></p>
</section>
<section id="groups-section"><h2>Failure groups</h2><p id="groups-note" class="muted"></p>
<div id="groups"></div></section>
</main>"""


def render_dashboard(data: dict[str, Any]) -> str:
    repository = data.get("repository") or "the history"
    return render_page(
        title=f"flake dashboard: {repository}",
        data=data,
        script=[
            asset(_ASSETS, "dom.js"),
            asset("flakewarden.dashboard", "dashboard.js"),
        ],
        style=[asset(_ASSETS, "base.css"), asset("flakewarden.dashboard", "dashboard.css")],
        body=BODY,
    )


def write_site(data: dict[str, Any], out: Path) -> Path:
    """Write ``out/index.html`` (in one rename); its path."""
    target = out / INDEX
    write_text_atomic(target, render_dashboard(data))
    return target
