"""A real headless Chromium for the page tests, driven through Playwright's Python package.

One browser per test module (the ``browser`` fixture), one fresh context and page per
page opened. Playwright launches Debian's ``/usr/bin/chromium`` (never a browser build
of its own) with a fresh ``--user-data-dir`` and the flags that keep it off the
network, which is closed here: without them it waits on component updates and sync.
Every request the page makes, every console message, every uncaught error and every
dialog is recorded, so a test can assert that nothing but the ``file://`` document was
loaded and no script of the data's ran.

The tests skip, naming the reason, only when Playwright or a Chromium cannot be found.
"""

from __future__ import annotations

import dataclasses
import os
import shutil
import tempfile
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any, Optional

import pytest

#: Where Debian's package puts it; ``FLAKEWARDEN_CHROMIUM`` points at another.
CHROMIUM_PATHS = ("/usr/bin/chromium", "/usr/bin/chromium-browser", "/usr/bin/google-chrome")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]


def find_chromium() -> Optional[str]:
    chosen = os.environ.get("FLAKEWARDEN_CHROMIUM")
    if chosen:
        return chosen if os.access(chosen, os.X_OK) else None
    for path in CHROMIUM_PATHS:
        if os.access(path, os.X_OK):
            return path
    return shutil.which("chromium")


def why_no_browser() -> str:
    """Why the browser tests cannot run here, or "" when they can."""
    try:
        import playwright.sync_api  # noqa: F401
    except ImportError:
        return "Playwright's Python package is not installed (pip install -e '.[test]')"
    chosen = os.environ.get("FLAKEWARDEN_CHROMIUM")
    if chosen and find_chromium() is None:
        return f"FLAKEWARDEN_CHROMIUM={chosen} is not an executable"
    if find_chromium() is None:
        return (
            "no Chromium found (apt-get install chromium, or set FLAKEWARDEN_CHROMIUM to one); "
            f"looked at {', '.join(CHROMIUM_PATHS)} and PATH"
        )
    return ""


@dataclasses.dataclass
class Opened:
    """A page opened from a file, and what it did while it loaded and ran."""

    page: Any
    url: str
    requests: list[str] = dataclasses.field(default_factory=list)
    console: list[tuple[str, str]] = dataclasses.field(default_factory=list)
    errors: list[str] = dataclasses.field(default_factory=list)
    dialogs: list[str] = dataclasses.field(default_factory=list)

    @property
    def console_errors(self) -> list[str]:
        return [text for kind, text in self.console if kind in ("error", "warning")]

    def wait(self, expression: str, timeout: float = 10.0) -> None:
        """Until ``expression`` is true in the page. Polled from here: Playwright's own
        ``wait_for_function`` evaluates a string in the page, which the page's policy
        (no ``unsafe-eval``) refuses, as it should."""
        deadline = time.monotonic() + timeout
        while not self.page.evaluate(expression):
            if time.monotonic() > deadline:
                raise AssertionError(f"still false after {timeout} s: {expression}")
            time.sleep(0.02)

    def screenshot(self, path: Path, full_page: bool = False) -> Path:
        path.parent.mkdir(parents=True, exist_ok=True)
        self.page.screenshot(path=str(path), full_page=full_page)
        return path


class Browser:
    """One Chromium; ``open(path)`` gives a fresh page on a ``file://`` URL."""

    def __init__(self, context: Any) -> None:
        self._context = context

    def open(self, path: Path, fragment: str = "", width: int = 1280, height: int = 900) -> Opened:
        page = self._context.new_page()
        page.set_viewport_size({"width": width, "height": height})
        url = path.resolve().as_uri() + fragment
        opened = Opened(page, url)
        page.on("request", lambda request: opened.requests.append(request.url))
        page.on("console", lambda message: opened.console.append((message.type, message.text)))
        page.on("pageerror", lambda error: opened.errors.append(str(error)))

        def dialog(d: Any) -> None:
            opened.dialogs.append(d.message)
            d.dismiss()

        page.on("dialog", dialog)
        page.goto(url, wait_until="load")
        return opened


def launch() -> Iterator[Browser]:
    """A browser for the time of the ``with``/fixture; skips when none can be found."""
    reason = why_no_browser()
    if reason:
        pytest.skip(f"no browser for the page tests: {reason}")
    from playwright.sync_api import sync_playwright

    profile = tempfile.mkdtemp(prefix="flakewarden-chromium-")
    try:
        with sync_playwright() as playwright:
            context = playwright.chromium.launch_persistent_context(
                profile,
                executable_path=find_chromium(),
                headless=True,
                args=FLAGS,
                offline=True,
            )
            try:
                yield Browser(context)
            finally:
                context.close()
    finally:
        shutil.rmtree(profile, ignore_errors=True)


@pytest.fixture(scope="module")
def browser() -> Iterator[Browser]:
    """One headless Chromium for the module's tests."""
    yield from launch()


def shots(tmp_path: Path) -> Path:
    """Where a test saves its screenshots: ``FLAKEWARDEN_SCREENSHOTS``, else its tmp folder."""
    return Path(os.environ.get("FLAKEWARDEN_SCREENSHOTS") or tmp_path)


def row_names(opened: Opened) -> list[str]:
    """The test ids of a page's table rows, top to bottom (report.html and the dashboard)."""
    return list(
        opened.page.eval_on_selector_all(
            "#rows tr:not(.detail) .test-name", "bs => bs.map(b => b.textContent)"
        )
    )
