"""The README and docs/: every relative link and anchor resolves, and the README stays short.

Anchors are checked against the slugs GitHub gives headings: the heading's text without its
Markdown, lower-cased, every character but letters, digits, ``-``, ``_`` and spaces dropped,
spaces turned into ``-``; a repeated slug gets ``-1``, ``-2``, ... Links inside code and inside
HTML comments are not links.
"""

from __future__ import annotations

import re
import shutil
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote

import pytest
import yaml
from helpers.hermetic import clean_env
from helpers.workflow_commands import parse_commands

REPO = Path(__file__).resolve().parents[1]
README = REPO / "README.md"
PAGES = [README, REPO / "CHANGELOG.md", *sorted((REPO / "docs").glob("*.md"))]

FENCE = re.compile(r"(?ms)^ {0,3}(```|~~~).*?^ {0,3}\1[^\n]*$")
COMMENT = re.compile(r"(?s)<!--.*?-->")
INLINE_CODE = re.compile(r"(`+)(?!`).*?(?<!`)\1(?!`)", re.S)
LINK = re.compile(r"!?\[(?:[^\[\]]|\[[^\]]*\])*\]\(\s*<?([^)\s>]+)>?(?:\s+\"[^\"]*\")?\s*\)")
DEFINITION = re.compile(r"(?m)^ {0,3}\[[^\]]+\]:\s*<?(\S+?)>?(?:\s+.*)?$")
HTML_TARGET = re.compile(r"""<(?:a|img)\b[^>]*?\b(?:href|src)=["']([^"']+)["']""")
HEADING = re.compile(r"(?m)^ {0,3}(#{1,6})[ \t]+(.*?)[ \t#]*$")
HTML_ANCHOR = re.compile(r"""<a\b[^>]*\b(?:name|id)=["']([^"']+)["']""")


def _prose(text: str) -> str:
    """The text with code blocks and comments blanked (kept as newlines, for line numbers)."""
    for pattern in (FENCE, COMMENT):
        text = pattern.sub(lambda m: "\n" * m.group(0).count("\n"), text)
    return text


def slug(heading: str) -> str:
    text = re.sub(r"!?\[([^\]]*)\]\([^)]*\)", r"\1", heading)  # a link: its text
    text = re.sub(r"<[^>]+>", "", text).replace("`", "")
    text = re.sub(r"(?<!\w)[*_]+|[*_]+(?!\w)", "", text)  # emphasis markers, not snake_case
    return re.sub(r"[^\w\- ]", "", text.lower()).replace(" ", "-")


def anchors(path: Path) -> set[str]:
    text = _prose(path.read_text(encoding="utf-8"))
    seen: dict[str, int] = {}
    found = set(HTML_ANCHOR.findall(text))
    for _, heading in HEADING.findall(text):
        base = slug(heading)
        count = seen.get(base, 0)
        found.add(base if count == 0 else f"{base}-{count}")
        seen[base] = count + 1
    return found


def links(path: Path) -> list[tuple[int, str]]:
    text = _prose(path.read_text(encoding="utf-8"))
    text = INLINE_CODE.sub(lambda m: " " * len(m.group(0)), text)
    found = []
    for pattern in (LINK, DEFINITION, HTML_TARGET):
        for match in pattern.finditer(text):
            found.append((text.count("\n", 0, match.start()) + 1, match.group(1)))
    return sorted(found)


def broken(path: Path) -> list[str]:
    problems = []
    for line, target in links(path):
        if re.match(r"^[a-z][a-z0-9+.-]*:", target, re.I):
            continue  # https:, mailto: ...
        file_part, _, anchor = target.partition("#")
        destination = (path.parent / unquote(file_part)).resolve() if file_part else path
        where = f"{path.relative_to(REPO)}:{line}: {target}"
        if not destination.exists():
            problems.append(f"{where}: no such file")
        elif REPO not in destination.parents and destination != REPO:
            problems.append(f"{where}: outside the repository")
        elif anchor and destination.suffix == ".md" and unquote(anchor) not in anchors(destination):
            problems.append(f"{where}: no heading with that anchor")
        elif anchor and destination.suffix != ".md":
            problems.append(f"{where}: an anchor into a file that is not Markdown")
    return problems


@pytest.mark.parametrize("path", PAGES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_every_relative_link_and_anchor_resolves(path: Path) -> None:
    assert broken(path) == []


def test_the_checker_sees_a_broken_link_and_a_broken_anchor(tmp_path: Path) -> None:
    """The check is live, and reads headings as GitHub slugs them."""
    page = tmp_path / "page.md"
    page.write_text(
        "# Narrow reruns: `--rerun-only` and `--rerun-except`\n\n## Narrow reruns\n\n"
        "## Any runner's JUnit: `flakewarden publish --junit`\n\n## Twice\n\n## Twice\n\n"
        "[a](#narrow-reruns---rerun-only-and---rerun-except) [b](#twice-1)\n"
        "[c](#any-runners-junit-flakewarden-publish---junit) [d](#narrow-reruns)\n"
        "[e](missing.md) [f](#narrow-reruns-rerun-only-and-rerun-except)\n"
        "`[g](in-code.md)` <!-- [h](commented-out.png) -->\n\n```\n[i](in-a-fence.md)\n```\n",
        encoding="utf-8",
    )
    problems = [p.split(": ", 1)[1] for p in _relative_to(tmp_path, page)]
    assert problems == [
        "#narrow-reruns-rerun-only-and-rerun-except: no heading with that anchor",
        "missing.md: no such file",
    ]


def _relative_to(root: Path, page: Path) -> list[str]:
    global REPO
    saved, REPO = REPO, root
    try:
        return broken(page)
    finally:
        REPO = saved


def test_the_docs_index_lists_every_page() -> None:
    index = (REPO / "docs" / "README.md").read_text(encoding="utf-8")
    listed = {target for _, target in links(REPO / "docs" / "README.md")}
    for page in sorted((REPO / "docs").glob("*.md")):
        if page.name != "README.md":
            assert page.name in listed, f"docs/README.md does not link {page.name}"
    assert index.startswith("# ")


# -- the README a stranger reads ------------------------------------------------------


def _readme() -> str:
    return README.read_text(encoding="utf-8")


def test_the_readme_is_short_and_links_the_reference() -> None:
    text = _readme()
    assert len(text.splitlines()) < 250
    linked = {target.partition("#")[0] for _, target in links(README)}
    for page in sorted((REPO / "docs").glob("*.md")):
        assert f"docs/{page.name}" in linked, f"the README does not link docs/{page.name}"


def test_the_readmes_workflow_is_complete_and_pins_what_the_examples_pin() -> None:
    [block] = re.findall(r"(?ms)^```yaml\n(name: Tests\n.*?)^```$", _readme())
    workflow = yaml.safe_load(block)
    assert workflow["permissions"] == {"contents": "read", "issues": "write"}
    steps = workflow["jobs"]["test"]["steps"]
    uses = [s["uses"] for s in steps if "uses" in s]
    assert uses[-1] == "flakewarden/flakewarden@v1"
    assert any("pip install" in s.get("run", "") for s in steps)
    minimal = yaml.safe_load((REPO / "examples" / "workflows" / "minimal.yml").read_text())
    pinned = {s["uses"] for s in minimal["jobs"]["test"]["steps"] if "uses" in s}
    # checkout and setup-python: the same commits as the example a user may copy instead.
    assert set(uses[:-1]) == {u for u in pinned if not u.startswith("flakewarden/")}
    assert all(re.fullmatch(r"[^@]+@[0-9a-f]{40}", u) for u in uses[:-1])
    # The inputs it shows are the action's.
    action = yaml.safe_load((REPO / "action.yml").read_text(encoding="utf-8"))
    assert set(steps[-1].get("with", {})) <= set(action["inputs"])


def test_the_readmes_commands_are_the_ones_that_run() -> None:
    text = _readme()
    # The demo: the command the release workflow runs from the installed wheel.
    assert "\ncd examples/demo && flakewarden run --coverage -- python -m pytest\n" in text
    # The project's tests: the script CI runs, which exists.
    assert "\nbash .ci/run\n" in text and (REPO / ".ci" / "run").is_file()


def _blockquote(text: str) -> list[str]:
    return [line[2:] for line in text.splitlines() if line.startswith("> ") and line[2:].strip()]


def test_the_readmes_excerpt_is_what_the_demo_writes(tmp_path: Path) -> None:
    """The summary, the console lines and the annotation the README shows are real output:
    the demo's, run here as the README says (as the action's step would name its artifact)."""
    demo = tmp_path / "demo"
    shutil.copytree(REPO / "examples" / "demo", demo)
    summary = tmp_path / "step-summary.md"
    summary.write_text("", encoding="utf-8")
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "flakewarden",
            "run",
            "--coverage",
            "--artifact-name",
            "flakewarden-test-0-attempt-1",
            "--",
            sys.executable,
            "-m",
            "pytest",
            "-p",
            "no:randomly",
            "-p",
            "no:cacheprovider",
        ],
        cwd=demo,
        env=clean_env(
            {
                "GITHUB_ACTIONS": "true",
                "GITHUB_WORKSPACE": str(demo),
                "GITHUB_STEP_SUMMARY": str(summary),
            }
        ),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    text = _readme()
    written = (demo / "flakewarden-report" / "summary.md").read_text(encoding="utf-8")
    shown = _blockquote(text)
    assert shown and shown == [line for line in written.splitlines() if line.strip()]
    assert summary.read_text(encoding="utf-8") == written  # the job summary is that file
    [console] = re.findall(r"(?ms)^It ends with:\n\n```\n(.*?)^```$", text)
    printed = done.stdout.splitlines()
    first = printed.index(console.splitlines()[0])  # the FLAKY-TEST-DETECTED line
    assert console.splitlines() == printed[first : first + 3]
    [warning] = [c for c in parse_commands(done.stdout) if c[0] == "warning"]
    _, props, message = warning
    first_line = message.splitlines()[0]
    assert f"⚠ {props['title']}" in text and f"  {first_line}\n" in text
    assert f"{props['file']}#L{props['line']}" in text
