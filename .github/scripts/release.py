"""What the release workflow asks of the repository before it publishes anything.

    python .github/scripts/release.py check v1.2.3     the tag, __version__ and CHANGELOG.md agree
    python .github/scripts/release.py notes 1.2.3      the release notes: that version's entry
    git tag --list 'v*' | python .github/scripts/release.py major-tag 1.2.3
                                                       v1 when 1.2.3 is the newest final 1.x.y

Standard library only: it runs before anything is installed. Exit 1 with one line per problem.
"""

from __future__ import annotations

import argparse
import ast
import datetime
import re
import sys
from pathlib import Path
from typing import NamedTuple

ROOT = Path(__file__).resolve().parents[2]
VERSION_FILE = Path("src/flakewarden/__init__.py")
CHANGELOG = Path("CHANGELOG.md")
# What a release may be numbered: N.N.N, or a pre-release of it (aN, bN, rcN).
VERSION = re.compile(r"(\d+)\.(\d+)\.(\d+)(?:(a|b|rc)(\d+))?")
HEADING = re.compile(r"^## \[(?P<version>[^\]]+)\](?: - (?P<date>\S+))?\s*$")
LINK_DEFINITION = re.compile(r"^\[[^\]]+\]: \S+\s*$")


class Entry(NamedTuple):
    version: str
    date: str | None
    body: str


def read_version(root: Path = ROOT) -> str:
    """``__version__`` as written in the package (read, not imported: the single source)."""
    tree = ast.parse((root / VERSION_FILE).read_text(encoding="utf-8"))
    for node in tree.body:
        if (
            isinstance(node, ast.Assign)
            and [getattr(t, "id", None) for t in node.targets] == ["__version__"]
            and isinstance(node.value, ast.Constant)
            and isinstance(node.value.value, str)
        ):
            return node.value.value
    raise SystemExit(f"release: no __version__ = '...' in {VERSION_FILE}")


def entries(text: str) -> list[Entry]:
    """Each ``## [version] - date`` section of a Keep a Changelog file, in order."""
    found: list[Entry] = []
    current: tuple[str, str | None] | None = None
    lines: list[str] = []
    for line in [*text.splitlines(), "## [end]"]:
        if not line.startswith("## "):
            lines.append(line)
            continue
        if current is not None:
            body = [x for x in lines if not LINK_DEFINITION.match(x)]
            found.append(Entry(current[0], current[1], "\n".join(body).strip() + "\n"))
        heading = HEADING.match(line)
        current = (heading["version"], heading["date"]) if heading else (line[3:].strip(), None)
        lines = []
    return found


def problems_with(tag: str, root: Path = ROOT) -> list[str]:
    """Everything that stops ``tag`` from being released; empty when it may be."""
    problems = []
    version = read_version(root)
    if tag != f"v{version}":
        problems.append(
            f"the tag {tag} is not v + the package's version ({version}, {VERSION_FILE}): "
            "tag the commit whose __version__ is the release's"
        )
    if not VERSION.fullmatch(version):
        problems.append(f"the version {version} is not N.N.N (or N.N.N followed by aN, bN, rcN)")
    changelog = root / CHANGELOG
    if not changelog.is_file():
        return [*problems, f"no {CHANGELOG}"]
    entry = next(
        (e for e in entries(changelog.read_text(encoding="utf-8")) if e.version == version), None
    )
    if entry is None:
        problems.append(f"{CHANGELOG} has no entry '## [{version}] - YYYY-MM-DD'")
        return problems
    try:
        datetime.date.fromisoformat(entry.date or "")
    except ValueError:
        problems.append(f"{CHANGELOG}'s entry for {version} is not dated YYYY-MM-DD: {entry.date}")
    if not entry.body.strip():
        problems.append(f"{CHANGELOG}'s entry for {version} is empty")
    return problems


def notes(version: str, root: Path = ROOT) -> str:
    """The body of ``version``'s changelog entry, for the GitHub release."""
    text = (root / CHANGELOG).read_text(encoding="utf-8")
    for entry in entries(text):
        if entry.version == version:
            return entry.body
    raise SystemExit(f"release: {CHANGELOG} has no entry for {version}")


def _key(version: str) -> tuple[int, int, int, int, int]:
    match = VERSION.fullmatch(version)
    if match is None:
        raise ValueError(version)
    major, minor, patch, kind, number = match.groups()
    # A final release sorts after its own pre-releases.
    rank = {"a": 0, "b": 1, "rc": 2, None: 3}[kind]
    return int(major), int(minor), int(patch), rank, int(number or 0)


def major_tag(version: str, tags: list[str]) -> str:
    """``vN`` when ``version`` is final and no final vN.x.y tag is newer; else ``""``.

    A pre-release never moves the major tag, nor does a fix released for an older minor
    after a newer one: ``@v1`` stays on the newest release of 1.
    """
    key = _key(version)
    if key[3] != 3:
        return ""
    for tag in tags:
        name = tag.strip().removeprefix("refs/tags/")
        if not name.startswith("v") or not VERSION.fullmatch(name[1:]):
            continue  # v1 itself, and tags that are no release
        other = _key(name[1:])
        if other[0] == key[0] and other[3] == 3 and other > key:
            return ""
    return f"v{key[0]}"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="release.py", description=__doc__.splitlines()[0])
    commands = parser.add_subparsers(dest="command", required=True)
    commands.add_parser("check", help="the tag, __version__ and CHANGELOG.md agree").add_argument(
        "tag"
    )
    commands.add_parser("notes", help="print a version's changelog entry").add_argument("version")
    commands.add_parser(
        "major-tag", help="print vN when the version is the newest of its major (tags on stdin)"
    ).add_argument("version")
    args = parser.parse_args(argv)
    if args.command == "check":
        problems = problems_with(args.tag)
        for problem in problems:
            print(f"release: {problem}", file=sys.stderr)
        if not problems:
            print(f"release: {args.tag} matches __version__ and {CHANGELOG}")
        return 1 if problems else 0
    if args.command == "notes":
        sys.stdout.write(notes(args.version))
        return 0
    print(major_tag(args.version, sys.stdin.read().splitlines()))
    return 0


if __name__ == "__main__":
    sys.exit(main())
