"""Who owns a test: GitHub's CODEOWNERS rules, and the config's ``owners`` over them.

GitHub reads the first of ``.github/CODEOWNERS``, ``CODEOWNERS`` and
``docs/CODEOWNERS``. Each line is a pattern and zero or more owners (``@user``,
``@org/team`` or an email address); ``#`` starts a comment, also after a space
on a rule's line; the **last** matching line wins, and a line without owners
leaves its paths unowned. Patterns follow gitignore's rules, except what GitHub
documents does not work there: ``!`` negation (such a line is skipped), ``[ ]``
ranges (brackets are literal) and ``\\#`` escapes. So:

- a pattern with a ``/`` at its start or in its middle is anchored at the root;
  otherwise it matches at any depth (``*.js``, ``apps/``, ``logs``);
- ``*`` matches within one path segment, ``?`` one character of it, ``**`` any
  number of segments (``**/logs``, ``docs/**``, ``a/**/b``);
- a pattern ending in ``/`` matches everything under that directory; a pattern
  whose last segment is a plain name matches that file or everything under that
  directory; a last segment with a wildcard matches direct entries only
  (``docs/*`` owns ``docs/a.md``, not ``docs/build/b.md``).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable, Mapping, Sequence
from pathlib import Path
from typing import Optional

LOCATIONS = (".github/CODEOWNERS", "CODEOWNERS", "docs/CODEOWNERS")
MAX_BYTES = 3 * 1024 * 1024  # GitHub ignores a larger CODEOWNERS file
_USER = re.compile(r"@([A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38})")
_TEAM = re.compile(r"@([A-Za-z0-9][A-Za-z0-9-]{0,38})/([A-Za-z0-9][A-Za-z0-9_.-]{0,99})")
_EMAIL = re.compile(r"[^@\s]+@[^@\s]+\.[^@\s]+")


@dataclasses.dataclass(frozen=True)
class Rule:
    pattern: str
    owners: tuple[str, ...]
    source: str  # where the rule is written: ".github/CODEOWNERS", "the config's owners"
    line: int  # its line in that file (0 for the config)
    text: str  # the line as written, to show why

    def matches(self, path: str) -> bool:
        return _compile(self.pattern).fullmatch(path) is not None


@dataclasses.dataclass(frozen=True)
class Owners:
    """The owners a rule gives a file, sorted into what GitHub can do with each."""

    rule: Optional[Rule]  # None: no rule matched
    users: tuple[str, ...] = ()  # logins, assignable
    teams: tuple[str, ...] = ()  # "org/team", mentioned (an issue cannot be assigned a team)
    emails: tuple[str, ...] = ()  # shown only: GitHub maps them to no login here

    @property
    def anyone(self) -> bool:
        return bool(self.users or self.teams or self.emails)


def valid_owner(owner: str) -> bool:
    return bool(_USER.fullmatch(owner) or _TEAM.fullmatch(owner) or _EMAIL.fullmatch(owner))


def parse(text: str, source: str) -> tuple[list[Rule], list[str]]:
    """The rules of a CODEOWNERS file, and the lines skipped (as GitHub skips them)."""
    rules: list[Rule] = []
    skipped: list[str] = []
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.strip()
        if not line or line.startswith("#"):
            continue
        words = line.split()
        pattern, owners = words[0], []
        for word in words[1:]:
            if word.startswith("#"):
                break  # an inline comment
            owners.append(word)
        why = _invalid(pattern, owners)
        if why:
            skipped.append(f"{source}:{number}: {why}")
            continue
        rules.append(Rule(pattern, tuple(owners), source, number, line))
    return rules, skipped


def _invalid(pattern: str, owners: Sequence[str]) -> str:
    if pattern.startswith("!"):
        return "negation (!) is not supported in CODEOWNERS"
    bad = [o for o in owners if not valid_owner(o)]
    return f"not an owner: {bad[0][:100]!r}" if bad else ""


def from_config(owners: Mapping[str, Sequence[str]]) -> list[Rule]:
    """The config's ``owners:`` mapping, in its order, as rules (checked by ``config``)."""
    return [
        Rule(pattern, tuple(names), "the config's owners", 0, f"{pattern}: {', '.join(names)}")
        for pattern, names in owners.items()
    ]


def find(root: Path) -> Optional[Path]:
    """The CODEOWNERS file GitHub uses in the repository at ``root``, if any."""
    for location in LOCATIONS:
        candidate = root / location
        if candidate.is_file():
            return candidate
    return None


def load(root: Path) -> tuple[list[Rule], list[str]]:
    """The rules of ``root``'s CODEOWNERS file (none when absent, unreadable or too big)."""
    path = find(root)
    if path is None:
        return [], []
    source = path.relative_to(root).as_posix()
    try:
        if path.stat().st_size > MAX_BYTES:
            return [], [f"{source}: larger than 3 MB, which GitHub ignores"]
        text = path.read_text(encoding="utf-8", errors="replace")
    except OSError as exc:
        return [], [f"{source}: cannot be read ({exc.strerror})"]
    return parse(text, source)


def owners_of(path: str, *rule_sets: Iterable[Rule]) -> Owners:
    """The owners of repository path ``path``: the last matching rule of the first rule set
    that has one (the config's before CODEOWNERS)."""
    path = path.lstrip("/")
    for rules in rule_sets:
        winner = None
        for rule in rules:
            if rule.matches(path):
                winner = rule
        if winner is not None:
            return _sorted(winner)
    return Owners(None)


def _sorted(rule: Rule) -> Owners:
    users, teams, emails = [], [], []
    for owner in rule.owners:
        team = _TEAM.fullmatch(owner)
        user = _USER.fullmatch(owner)
        if team:
            teams.append(f"{team.group(1)}/{team.group(2)}")
        elif user:
            users.append(user.group(1))
        else:
            emails.append(owner)
    return Owners(rule, tuple(dict.fromkeys(users)), tuple(dict.fromkeys(teams)), tuple(emails))


@dataclasses.dataclass
class Ownership:
    """Who owns each test of one run: the config's rules, then CODEOWNERS.

    ``prefix`` is where the run's root directory lies in the repository (``""`` at
    its root), so a test's file is matched by its path in the repository.
    """

    config_rules: list[Rule] = dataclasses.field(default_factory=list)
    file_rules: list[Rule] = dataclasses.field(default_factory=list)
    prefix: str = ""
    triage_label: str = "flake-triage"
    skipped: list[str] = dataclasses.field(default_factory=list)

    def path_of(self, test_file: str) -> str:
        joined = f"{self.prefix.strip('/')}/{test_file}" if self.prefix else test_file
        parts: list[str] = []
        for part in joined.replace("\\", "/").split("/"):
            if part in ("", "."):
                continue
            if part == "..":
                if parts:
                    parts.pop()
                continue
            parts.append(part)
        return "/".join(parts)

    def of(self, test_file: str) -> tuple[Owners, str]:
        """The owners of a test's file, and its path in the repository."""
        if not test_file:
            return Owners(None), ""
        path = self.path_of(test_file)
        return owners_of(path, self.config_rules, self.file_rules), path


_CACHE: dict[str, re.Pattern[str]] = {}


def _compile(pattern: str) -> re.Pattern[str]:
    found = _CACHE.get(pattern)
    if found is None:
        found = _CACHE[pattern] = re.compile(_regex(pattern))
    return found


def _regex(pattern: str) -> str:
    directory = pattern.endswith("/")
    body = pattern.rstrip("/")
    anchored = body.startswith("/") or "/" in body
    segments = body.lstrip("/").split("/")
    parts: list[str] = []
    for position, segment in enumerate(segments):
        last = position == len(segments) - 1
        if segment == "**":
            parts.append(".*" if last else "(?:[^/]+/)*")
            continue
        text = "".join(
            "[^/]*" if char == "*" else "[^/]" if char == "?" else re.escape(char)
            for char in segment
        )
        parts.append(text if last else text + "/")
    regex = "".join(parts)
    if not anchored:
        regex = "(?:[^/]+/)*" + regex
    if directory:
        return regex + "/.+"
    if segments[-1] == "**" or any(c in segments[-1] for c in "*?"):
        return regex  # a wildcard last segment: the entries it names, not what is under them
    return regex + "(?:/.+)?"
