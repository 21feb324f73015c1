"""``history ingest --from-github`` against the emulator over loopback, with real zips of real
reports: expired and gone artifacts, a corrupt report, a hostile zip, the token never sent to
the storage host, and a second ingest that downloads nothing old."""

from __future__ import annotations

import json
import re
import urllib.request
from pathlib import Path

import pytest
from helpers.github_emulator import Fault, GitHubEmulator
from helpers.github_emulator_actions import zip_directory, zip_members
from helpers.github_fixtures import emulator_env
from helpers.history_reports import as_github_run, report_dirs

from flakewarden.cli import main
from flakewarden.history.store import HistoryStore

__all__ = ["report_dirs"]  # the fixture


def test_ingest_from_github(
    report_dirs: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        good = emu.add_workflow_run(created_at=1_700_000_000)
        good_artifact = emu.add_artifact(
            good["id"],
            "flakewarden-tests-0-attempt-1",
            zip_directory(as_github_run(report_dirs[0], tmp_path / "good", good["id"])),
        )
        emu.add_artifact(good["id"], "coverage-html", b"not ours, never downloaded")
        expired = emu.add_workflow_run(created_at=1_700_000_100)
        emu.add_artifact(expired["id"], "flakewarden-tests-0-attempt-1", b"", expired=True)
        gone = emu.add_workflow_run(created_at=1_700_000_200)
        gone_artifact = emu.add_artifact(gone["id"], "flakewarden-tests-0-attempt-1", b"PK")
        emu.faults.append(
            Fault(
                status=410, path=rf"/artifacts/{gone_artifact['id']}/zip$", body={"message": "Gone"}
            )
        )
        corrupt = emu.add_workflow_run(created_at=1_700_000_300)
        emu.add_artifact(
            corrupt["id"],
            "flakewarden-tests-0-attempt-1",
            zip_members({"report.json": b'{"schema": 1, "tests": [{"id": 3}'}),  # cut short
        )
        hostile = emu.add_workflow_run(created_at=1_700_000_400)
        emu.add_artifact(
            hostile["id"],
            "flakewarden-tests-0-attempt-1",
            zip_members({"../../outside/report.json": b"{}", "report.json": b"{}"}),
        )
        matrix = emu.add_workflow_run(created_at=1_700_000_500)
        both = tmp_path / "matrix"
        as_github_run(report_dirs[0], both / "py39", matrix["id"], job_name="python=3.9")
        as_github_run(report_dirs[1], both / "py312", matrix["id"], job_name="python=3.12")
        matrix_artifact = emu.add_artifact(matrix["id"], "flakewarden-reports", zip_directory(both))
        emu.add_workflow_run(created_at=1_700_000_600, conclusion="cancelled")  # no artifact
        emu.add_workflow_run(status="in_progress", conclusion=None)  # not completed: not listed

        db = tmp_path / "history.db"
        argv = ["history", "ingest", "--from-github", "--db", str(db), "--workflow", "ci.yml"]
        assert main(argv) == 0
        out, err = capsys.readouterr()
        assert (
            "7 new run(s) looked at, 6 report artifact(s), 3 run(s) ingested, 0 already in, "
            "2 expired, 2 unreadable, 1 run(s) without a report artifact" in out
        )
        assert (
            f"expired artifact, skipped: flakewarden-tests-0-attempt-1 (run {expired['id']}" in err
        )
        assert f"(run {gone['id']}, artifact {gone_artifact['id']})" in err
        assert re.search(rf"unreadable report, skipped: .*run {corrupt['id']}.*report\.json", err)
        assert re.search(
            rf"unreadable artifact, skipped: .*run {hostile['id']}.*unsafe member", err
        )
        requests = int(re.search(r"; (\d+) requests \((\d+) to the API, (\d+) downloads\)", out)[1])

        with HistoryStore.open(db) as store:
            runs = store.runs()
            assert sorted((r.context.run_id, r.context.job_name) for r in runs) == [
                (good["id"], ""),
                (matrix["id"], "python=3.12"),
                (matrix["id"], "python=3.9"),
            ]
            # One report per artifact is named by the artifact; several, by their member too.
            matrix_source = f"github:run/{matrix['id']}/artifact/{matrix_artifact['id']}"
            assert {r.source for r in runs} == {
                f"github:run/{good['id']}/artifact/{good_artifact['id']}",
                f"{matrix_source}/py39/report.json",
                f"{matrix_source}/py312/report.json",
            }
            assert store.counts()[2] == 9  # three tests in each of three runs

        # The token went to the API only: every download reached the storage host without it.
        downloads = list(emu.blob_log)
        assert len(downloads) == 4  # good, corrupt, hostile, matrix; expired and gone: none
        assert emu.leaked_authorization == []
        assert all("authorization" not in b["headers"] for b in downloads)
        zips = emu.requests_for("GET", r"/zip$")
        assert len(zips) == 5 and all(r.headers["authorization"] for r in zips)
        assert emu.schema_errors == []

        # A second ingest lists the runs once and downloads nothing.
        before = len(emu.log)
        assert main(argv) == 0
        out, _ = capsys.readouterr()
        assert "0 new run(s) looked at" in out and "1 requests (1 to the API, 0 downloads)" in out
        assert len(emu.log) == before + 1 and len(emu.blob_log) == 4

        # A new run: only it is downloaded.
        new = emu.add_workflow_run()
        emu.add_artifact(
            new["id"],
            "flakewarden-tests-0-attempt-1",
            zip_directory(as_github_run(report_dirs[1], tmp_path / "new", new["id"])),
        )
        assert main(argv) == 0
        out, _ = capsys.readouterr()
        assert "1 new run(s) looked at, 1 report artifact(s), 1 run(s) ingested" in out
        assert "4 requests (3 to the API, 1 downloads)" in out
        # First ingest: 1 page of runs, then per run 1 artifact list, and per artifact 1 zip
        # request plus 1 download.
        assert requests == 1 + 7 + 5 + 4
        assert emu.leaked_authorization == [] and emu.schema_errors == []


def test_the_storage_host_catches_a_leaked_token() -> None:
    """The emulator's check has teeth: a request carrying the token is refused and recorded."""
    with GitHubEmulator() as emu:
        run = emu.add_workflow_run()
        artifact = emu.add_artifact(run["id"], "flakewarden-x", b"PK")
        status, headers, _ = emu._route_actions(
            f"/actions/artifacts/{artifact['id']}/zip", "", {}, emu.url
        )
        assert status == 302
        request = urllib.request.Request(
            headers["location"], headers={"Authorization": f"Bearer {emu.token}"}
        )
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=60)
        assert caught.value.code == 403
        assert emu.leaked_authorization == [f"Bearer {emu.token}"]
        # Without it, the signed URL serves the bytes; tampered or expired, it does not.
        with urllib.request.urlopen(headers["location"], timeout=60) as response:
            assert response.read() == b"PK"
        tampered = headers["location"].replace("urlSignature=", "urlSignature=0")
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(tampered, timeout=60)
        assert (refused.value.code, refused.value.read()) == (403, b"bad signature")
        assert emu.leaked_authorization == [f"Bearer {emu.token}"]  # still only the one
    assert json.dumps(emu.schema_errors) == "[]"


def test_an_ingest_cut_short_resumes_from_the_run_it_stopped_at(
    report_dirs: list[Path],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    with GitHubEmulator() as emu:
        emulator_env(monkeypatch, emu)
        ids = []
        for n in range(3):
            run = emu.add_workflow_run(created_at=1_700_000_000 + n)
            report = as_github_run(report_dirs[n % 2], tmp_path / f"r{n}", run["id"])
            artifact = emu.add_artifact(run["id"], "flakewarden-t", zip_directory(report))
            ids.append((run["id"], artifact["id"]))
        # GitHub fails the second run's download through every retry (1 try + 4 retries).
        emu.faults.append(Fault(status=502, path=rf"/artifacts/{ids[1][1]}/zip$", times=5))
        db = tmp_path / "history.db"
        assert main(["history", "ingest", "--from-github", "--db", str(db)]) == 0
        out, err = capsys.readouterr()
        assert f"stopped early: run {ids[1][0]}:" in err and "502" in err
        assert "1 new run(s) looked at" in out
        with HistoryStore.open(db) as store:
            assert [r.context.run_id for r in store.runs()] == [ids[0][0]]
            assert store.last_github_run_id(emu.full_name, "", "") == ids[0][0]
        assert main(["history", "ingest", "--from-github", "--db", str(db)]) == 0
        out, _ = capsys.readouterr()
        assert "2 new run(s) looked at, 2 report artifact(s), 2 run(s) ingested" in out
        with HistoryStore.open(db) as store:
            assert sorted(r.context.run_id for r in store.runs()) == [i for i, _ in ids]
        assert emu.leaked_authorization == [] and emu.schema_errors == []
