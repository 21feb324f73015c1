"""CODEOWNERS as GitHub documents it: the example file of "About code owners", line by line,
and the rules around it (precedence, locations, skipped lines, the config over the file)."""

from __future__ import annotations

from pathlib import Path

import pytest

from flakewarden.issues.owners import from_config, load, owners_of, parse

# GitHub's documented example (docs.github.com, "About code owners", CODEOWNERS syntax).
EXAMPLE = """\
# This is a comment.
# Each line is a file pattern followed by one or more owners.

# These owners will be the default owners for everything in
# the repo. Unless a later match takes precedence,
# @global-owner1 and @global-owner2 will be requested for
# review when someone opens a pull request.
*       @global-owner1 @global-owner2

# Order is important; the last matching pattern takes the most
# precedence. When someone opens a pull request that only
# modifies JS files, only @js-owner and not the global
# owner(s) will be requested for a review.
*.js    @js-owner #This is an inline comment.

# You can also use email addresses if you prefer. They'll be
# used to look up users just like we do for commit author
# emails.
*.go docs@example.com

# Teams can be specified as code owners as well. Teams should
# be identified in the format @org/team-name. Teams must have
# explicit write access to the repository. In this example,
# the octocats team in the octo-org organization owns all .txt files.
*.txt @octo-org/octocats

# In this example, @doctocat owns any files in the build/logs
# directory at the root of the repository and any of its
# subdirectories.
/build/logs/ @doctocat

# The `docs/*` pattern will match files like
# `docs/getting-started.md` but not further nested files like
# `docs/build-app/troubleshooting.md`.
docs/*  docs@example.com

# In this example, @octocat owns any file in an apps directory
# anywhere in your repository.
apps/ @octocat

# In this example, @doctocat owns any file in the `/docs`
# directory in the root of your repository and any of its
# subdirectories.
/docs/ @doctocat

# In this example, any change inside the `/scripts` directory
# will require approval from @doctocat or @octocat.
/scripts/ @doctocat @octocat

# In this example, @octocat owns any file in a `/logs` directory such as
# `/build/logs`, `/scripts/logs`, and `/deeply/nested/logs`. Any changes
# in a `/logs` directory will require approval from @octocat.
**/logs @octocat

# In this example, @octocat owns any file in the `/apps`
# directory in the root of your repository except for the `/apps/github`
# subdirectory, as its owners are left empty. Without an owner, changes
# to `apps/github` can be made with the approval of any user who has
# write access to the repository.
/apps/ @octocat
/apps/github
"""

CASES = [
    # path, the owners it has (users, teams, emails), the pattern that decided
    ("README.md", ("global-owner1", "global-owner2"), "*"),
    ("src/deep/tree/notes.rst", ("global-owner1", "global-owner2"), "*"),
    ("app.js", ("js-owner",), "*.js"),
    ("web/static/app.js", ("js-owner",), "*.js"),
    ("main.go", ("docs@example.com",), "*.go"),
    ("cmd/tool/main.go", ("docs@example.com",), "*.go"),
    ("notes.txt", ("octo-org/octocats",), "*.txt"),
    ("a/b/notes.txt", ("octo-org/octocats",), "*.txt"),
    ("build/logs/today.log", ("octocat",), "**/logs"),  # **/logs is later than /build/logs/
    ("build/logs/2024/x.bin", ("octocat",), "**/logs"),
    ("build/other/x.bin", ("global-owner1", "global-owner2"), "*"),
    ("docs/getting-started.md", ("doctocat",), "/docs/"),  # /docs/ is later than docs/*
    ("docs/build-app/troubleshooting.md", ("doctocat",), "/docs/"),
    ("scripts/deploy.sh", ("doctocat", "octocat"), "/scripts/"),
    ("scripts/nested/deploy.sh", ("doctocat", "octocat"), "/scripts/"),
    ("scriptsx/deploy.sh", ("global-owner1", "global-owner2"), "*"),
    ("scripts/logs/out.log", ("octocat",), "**/logs"),
    ("deeply/nested/logs/out.log", ("octocat",), "**/logs"),
    ("logs/out.log", ("octocat",), "**/logs"),
    ("deeply/nested/logsss/out.log", ("global-owner1", "global-owner2"), "*"),
    ("apps/web/index.html", ("octocat",), "/apps/"),
    ("service/apps/index.html", ("octocat",), "apps/"),
    ("apps/github/index.html", (), "/apps/github"),  # owners left empty: unowned
    ("apps/githubx/index.html", ("octocat",), "/apps/"),
]


@pytest.mark.parametrize(("path", "owners", "pattern"), CASES, ids=[c[0] for c in CASES])
def test_githubs_documented_example(path: str, owners: tuple[str, ...], pattern: str) -> None:
    rules, skipped = parse(EXAMPLE, ".github/CODEOWNERS")
    assert skipped == []
    found = owners_of(path, rules)
    assert found.rule is not None and found.rule.pattern == pattern
    assert (*found.users, *found.teams, *found.emails) == owners
    assert found.anyone is bool(owners)


def test_docs_star_owns_direct_entries_only() -> None:
    rules, _ = parse("* @all\ndocs/* docs@example.com\n", "CODEOWNERS")
    assert owners_of("docs/getting-started.md", rules).emails == ("docs@example.com",)
    assert owners_of("docs/build-app/troubleshooting.md", rules).users == ("all",)
    assert owners_of("other/docs/x.md", rules).users == ("all",)  # anchored: a / in it


def test_the_matching_line_is_kept_to_say_why() -> None:
    rules, _ = parse(EXAMPLE, ".github/CODEOWNERS")
    rule = owners_of("app.js", rules).rule
    assert rule is not None
    assert (rule.source, rule.line, rule.text) == (
        ".github/CODEOWNERS",
        14,
        "*.js    @js-owner #This is an inline comment.",
    )


def test_what_github_does_not_support_is_skipped_or_literal() -> None:
    text = "* @all\n!secret.txt @nobody\n[abc].py @range\ntests/ @not@valid\n"
    rules, skipped = parse(text, "CODEOWNERS")
    assert [r.pattern for r in rules] == ["*", "[abc].py"]
    assert skipped == [
        "CODEOWNERS:2: negation (!) is not supported in CODEOWNERS",
        "CODEOWNERS:4: not an owner: '@not@valid'",
    ]
    assert owners_of("a.py", rules).users == ("all",)  # brackets are not a range
    assert owners_of("[abc].py", rules).users == ("range",)
    assert owners_of("tests/x.py", rules).users == ("all",)  # the skipped line owns nothing


def test_no_rule_and_no_file_mean_no_owner(tmp_path: Path) -> None:
    rules, _ = parse("*.js @js\n", "CODEOWNERS")
    assert owners_of("tests/test_a.py", rules).rule is None
    assert load(tmp_path) == ([], [])


def test_githubs_locations_are_read_in_its_order(tmp_path: Path) -> None:
    (tmp_path / "docs").mkdir()
    (tmp_path / "docs" / "CODEOWNERS").write_text("* @from-docs\n", encoding="utf-8")
    assert owners_of("x.py", load(tmp_path)[0]).users == ("from-docs",)
    (tmp_path / "CODEOWNERS").write_text("* @from-root\n", encoding="utf-8")
    assert owners_of("x.py", load(tmp_path)[0]).users == ("from-root",)
    (tmp_path / ".github").mkdir()
    (tmp_path / ".github" / "CODEOWNERS").write_text("* @from-github\n", encoding="utf-8")
    rules, _ = load(tmp_path)
    assert owners_of("x.py", rules).users == ("from-github",)
    assert rules[0].source == ".github/CODEOWNERS"


def test_the_config_wins_over_codeowners_and_falls_through_when_it_has_no_match() -> None:
    file_rules, _ = parse("* @everyone\ntests/ @qa\n", "CODEOWNERS")
    config_rules = from_config({"tests/cache/": ["@cache-team-lead", "@acme/cache"]})
    chosen = owners_of("tests/cache/test_fill.py", config_rules, file_rules)
    assert (chosen.users, chosen.teams) == (("cache-team-lead",), ("acme/cache",))
    assert chosen.rule is not None and chosen.rule.source == "the config's owners"
    assert owners_of("tests/test_other.py", config_rules, file_rules).users == ("qa",)


def test_a_huge_file_is_ignored_as_github_ignores_it(tmp_path: Path) -> None:
    (tmp_path / "CODEOWNERS").write_bytes(b"* @a\n" * (700 * 1024))
    rules, skipped = load(tmp_path)
    assert rules == [] and skipped == ["CODEOWNERS: larger than 3 MB, which GitHub ignores"]
