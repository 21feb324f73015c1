"""Webhook notifications: a real receiver on loopback, a slow one, a failing one, and a URL
that is never printed. New flake issues through ``flakewarden issues``, escalations through
``flakewarden reevaluate``."""

from __future__ import annotations

import http.server
import json
import socket
import threading
import time
from pathlib import Path
from typing import Any

import pytest
from helpers.github_emulator import GitHubEmulator
from helpers.github_fixtures import emulator_env, flaky, write_report

from flakewarden.cli import main
from flakewarden.issues import notify
from flakewarden.issues.marker import format_marker

SECRET_PATH = "/services/T000/B000/XXXXsecretXXXX"


class Receiver:
    """A webhook receiver: records each message; answers ``status`` after ``delay`` seconds."""

    def __init__(self, status: int = 200, delay: float = 0.0) -> None:
        self.status, self.delay = status, delay
        self.messages: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        outer = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def log_message(self, format: str, *args: Any) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("content-length") or 0)
                outer.messages.append(json.loads(self.rfile.read(length)))
                outer.headers.append(dict(self.headers))
                time.sleep(outer.delay)
                try:
                    self.send_response(outer.status)
                    self.send_header("content-length", "2")
                    self.end_headers()
                    self.wfile.write(b"ok")
                except OSError:
                    pass  # the client gave up waiting

        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}{SECRET_PATH}"

    def __enter__(self) -> Receiver:
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.server.shutdown()
        self.server.server_close()


def _issues(tmp_path: Path, *test_ids: str, deadline: str = "30") -> int:
    report = write_report(tmp_path / "report", [flaky(t) for t in test_ids])
    return main(["issues", "--report-dir", str(report), "--deadline", deadline])


def test_each_new_flake_issue_is_one_message_with_its_fields(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    with Receiver() as receiver:
        monkeypatch.setenv(notify.ENV, receiver.url)
        assert _issues(tmp_path, "tests/test_a.py::test_race", "tests/test_b.py::test_x") == 0
        assert _issues(tmp_path, "tests/test_a.py::test_race") == 0  # a recurrence: no message
    assert [m["test_id"] for m in receiver.messages] == [
        "tests/test_a.py::test_race",
        "tests/test_b.py::test_x",
    ]
    first = receiver.messages[0]
    assert first == {
        "text": (
            "New flaky test in octo-org/octo-repo: `tests/test_a.py::test_race` (1 hit). "
            "Owner: nobody yet (triage). <https://github.com/octo-org/octo-repo/issues/1|#1>"
        ),
        "event": "new-flake",
        "repository": "octo-org/octo-repo",
        "test_id": "tests/test_a.py::test_race",
        "issue_number": 1,
        "issue_url": "https://github.com/octo-org/octo-repo/issues/1",
        "owners": [],
        "hits": 1,
        "rate": None,
    }
    assert receiver.headers[0]["Content-Type"] == "application/json"
    assert "Authorization" not in receiver.headers[0]  # the GitHub token never goes there
    out, err = capsys.readouterr()
    assert err == "" and SECRET_PATH not in out


@pytest.mark.parametrize(("status", "said"), [(500, "HTTP 500"), (404, "HTTP 404")])
def test_a_failing_receiver_is_one_warning_without_the_url(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
    status: int,
    said: str,
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    with Receiver(status=status) as receiver:
        monkeypatch.setenv(notify.ENV, receiver.url)
        assert _issues(tmp_path, "t.py::test_x") == 0
    out, err = capsys.readouterr()
    assert (
        err.count("\n") == 1 and f"webhook notification for #1: the receiver answered {said}" in err
    )
    assert SECRET_PATH not in out + err and "127.0.0.1" not in err
    assert len(emulator.issues) == 1  # the issue was filed all the same


def test_a_slow_receiver_costs_at_most_the_deadline(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    with Receiver(delay=30) as receiver:
        monkeypatch.setenv(notify.ENV, receiver.url)
        started = time.monotonic()
        assert _issues(tmp_path, "t.py::a", "t.py::b", "t.py::c", deadline="3") == 0
        spent = time.monotonic() - started
    err = capsys.readouterr().err
    assert spent < 10, spent  # a 30 s receiver, 3 s deadline: never 3 x 30 s
    assert "did not answer in time" in err or "the deadline passed" in err
    assert SECRET_PATH not in err


def test_an_unreachable_receiver_and_a_bad_url_are_one_line_each(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    capsys: pytest.CaptureFixture[str],
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    with socket.socket() as probe:  # a port nobody listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    monkeypatch.setenv(notify.ENV, f"http://127.0.0.1:{port}{SECRET_PATH}")
    assert _issues(tmp_path, "t.py::a") == 0
    err = capsys.readouterr().err
    assert "the receiver could not be reached" in err and SECRET_PATH not in err
    monkeypatch.setenv(notify.ENV, f"ftp://user:pw@example.com{SECRET_PATH}")
    assert _issues(tmp_path / "again", "t.py::b") == 0
    err = capsys.readouterr().err
    assert "the webhook URL is not an http(s) URL; no notification sent" in err
    assert SECRET_PATH not in err and "pw" not in err


def test_an_escalation_is_one_message_with_its_owners(
    emulator: GitHubEmulator,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emulator_env(monkeypatch, emulator)
    monkeypatch.chdir(tmp_path)
    marker = {
        "id": "tests/test_q.py::test_old",
        "hits": 7,
        "quarantined_at": "2020-01-01T00:00:00Z",
        "owners": ["@acme/cache"],
    }
    issue = emulator.add_issue(
        "flake: tests/test_q.py::test_old", format_marker(marker), ("flaky-test", "quarantined")
    )
    issue["assignees"] = [emulator._user("alice")]
    with Receiver() as receiver:
        (tmp_path / "flakewarden.yml").write_text(
            f"notify:\n  webhook_url: {receiver.url}\n", encoding="utf-8"
        )
        assert main(["reevaluate", "--config", str(tmp_path / "flakewarden.yml")]) == 0
        assert main(["reevaluate", "--config", str(tmp_path / "flakewarden.yml")]) == 0
    (message,) = receiver.messages  # escalated once, announced once
    assert message["event"] == "escalated" and message["owners"] == ["alice", "@acme/cache"]
    assert message["hits"] == 7 and message["issue_number"] == issue["number"]
    assert message["text"].startswith("Quarantine escalated in octo-org/octo-repo: ")
