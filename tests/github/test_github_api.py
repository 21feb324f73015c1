"""The REST client over real HTTP against the loopback GitHub emulator."""

from __future__ import annotations

import json
import re
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
import requests
from helpers.github_emulator import (
    DATA,
    Fault,
    GitHubEmulator,
    primary_rate_limit,
    schemas,
    secondary_rate_limit,
)
from helpers.github_fixtures import FakeSleep, make_client

from flakewarden.errors import GitHubError
from flakewarden.github.api import BODY_LIMIT, GitHubClient, cap_body
from flakewarden.github.api_errors import GitHubRequestError

ISSUES = "/repos/octo-org/octo-repo/issues"


def _fixture(name: str) -> list[dict]:
    return json.loads((DATA / "fixtures" / name).read_text(encoding="utf-8"))


# -- auth, headers, configuration --------------------------------------------------


def test_sends_bearer_token_user_agent_and_api_version(emulator: GitHubEmulator) -> None:
    client = make_client(emulator)
    assert client.get_json(ISSUES) == []
    (request,) = emulator.log
    assert request.headers["authorization"] == f"Bearer {emulator.token}"
    assert request.headers["user-agent"].startswith("flakewarden/")
    assert request.headers["x-github-api-version"] == "2022-11-28"
    assert request.headers["accept"] == "application/vnd.github+json"


def test_from_env_uses_github_token_and_enterprise_api_url() -> None:
    with GitHubEmulator(prefix="/api/v3") as emu:
        for n in range(3):
            emu.add_issue(f"issue {n}", labels=("flaky-test",))
        env = {"GITHUB_TOKEN": emu.token, "GITHUB_API_URL": emu.url}
        client = GitHubClient.from_env(env=env, sleep=FakeSleep())
        items = list(client.paginate(ISSUES, {"per_page": 2}))
        assert [i["number"] for i in items] == [3, 2, 1]
        assert [r.path for r in emu.log] == ["/api/v3" + ISSUES, "/api/v3/repositories/1000/issues"]
        assert emu.schema_errors == []


def test_token_flag_wins_over_environment(emulator: GitHubEmulator) -> None:
    env = {"GITHUB_TOKEN": "wrong", "GITHUB_API_URL": emulator.url}
    client = GitHubClient.from_env(emulator.token, env=env, sleep=FakeSleep())
    client.get_json(ISSUES)
    assert emulator.log[0].headers["authorization"] == f"Bearer {emulator.token}"


def test_missing_token_says_what_to_set() -> None:
    with pytest.raises(GitHubError, match="set GITHUB_TOKEN"):
        GitHubClient.from_env(env={})


def test_bad_api_url_is_refused() -> None:
    with pytest.raises(GitHubError, match="GITHUB_API_URL"):
        GitHubClient("t0ken", api_url="api.github.com")


def test_bad_token_is_401_and_never_shown(emulator: GitHubEmulator) -> None:
    secret = "ghp_verySecretValue123456"
    client = GitHubClient(secret, api_url=emulator.url, sleep=FakeSleep())
    with pytest.raises(GitHubRequestError) as caught:
        client.get_json(ISSUES)
    assert caught.value.status == 401
    message = str(caught.value)
    assert "Bad credentials" in message and "GITHUB_TOKEN" in message
    assert secret not in message and "\n" not in message
    assert secret not in repr(client)
    assert len(emulator.log) == 1  # a bad token is not retried


def test_token_echoed_by_the_server_is_masked(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(400, body={"message": f"token {emulator.token} is odd"}))
    with pytest.raises(GitHubRequestError) as caught:
        make_client(emulator).get_json(ISSUES)
    assert emulator.token not in str(caught.value)
    assert "token *** is odd" in str(caught.value)


def test_read_only_token_gets_permission_hint_without_retry() -> None:
    with GitHubEmulator(read_only_tokens=("ghs_readonly",)) as emu:
        client = GitHubClient("ghs_readonly", api_url=emu.url, sleep=FakeSleep())
        with pytest.raises(GitHubRequestError) as caught:
            client.post_json(ISSUES, {"title": "x"})
        assert caught.value.status == 403
        assert "issues: write" in str(caught.value)
        assert len(emu.log) == 1


# -- retries -----------------------------------------------------------------------------


def test_5xx_is_retried_with_growing_backoff(emulator: GitHubEmulator) -> None:
    emulator.faults += [Fault(500), Fault(502)]
    sleep = FakeSleep()
    client = make_client(emulator, sleep, backoff=1.0)
    assert client.get_json(ISSUES) == []
    assert [r.status for r in emulator.log] == [500, 502, 200]
    assert len(sleep.calls) == 2
    assert 1.0 <= sleep.calls[0] <= 1.25 and 2.0 <= sleep.calls[1] <= 2.5


def test_5xx_gives_up_after_bounded_tries(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(502, times=10))
    client = make_client(emulator, max_retries=3)
    with pytest.raises(GitHubRequestError, match="answered 502 4 times") as caught:
        client.get_json(ISSUES)
    assert caught.value.status == 502
    assert len(emulator.log) == 4


def test_timeout_is_retried(emulator: GitHubEmulator) -> None:
    # The first answer never comes, however slow the machine; the retry's read timeout
    # is generous, so its answer is in time on a loaded machine too.
    emulator.faults.append(Fault(hang=True))
    client = make_client(emulator, timeout=(5.0, 1.0))
    assert client.get_json(ISSUES) == []
    assert len(emulator.log) == 2


def test_timeouts_give_up_with_a_clear_message(emulator: GitHubEmulator) -> None:
    # Answers that never come time out however slow the machine is (a delayed answer could
    # beat the read timeout on a loaded one).
    emulator.faults.append(Fault(hang=True, times=3))
    client = make_client(emulator, timeout=(2.0, 0.1), max_retries=2)
    with pytest.raises(GitHubRequestError, match="timed out 3 times"):
        client.get_json(ISSUES)
    assert len(emulator.log) == 3  # 1 try + 2 retries, then it gave up


def test_dropped_connection_is_retried(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(drop=True))
    assert make_client(emulator).get_json(ISSUES) == []
    assert len(emulator.log) == 2


def test_refused_connection_is_not_retried_and_names_the_url() -> None:
    """Nothing listens there: asking again cannot help, so no backoff is spent on it."""
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]  # bound, never listening: connections are refused
        sleep = FakeSleep()
        client = GitHubClient(
            "t0ken123", api_url=f"http://127.0.0.1:{port}", sleep=sleep, max_retries=2
        )
        with pytest.raises(GitHubRequestError, match=f"127.0.0.1:{port}") as caught:
            client.get_json(ISSUES)
    assert caught.value.status == 0 and caught.value.final
    assert "refused" in str(caught.value)
    assert sleep.calls == [] and client.requests_sent == 1


# -- rate limits ---------------------------------------------------------------------------


def test_secondary_rate_limit_waits_retry_after(emulator: GitHubEmulator) -> None:
    emulator.add_issue("target")
    emulator.faults.append(secondary_rate_limit(retry_after=7, method="POST"))
    sleep = FakeSleep()
    client = make_client(emulator, sleep, write_interval=0)
    client.post_json(ISSUES + "/1/comments", {"body": "hello"})
    assert sleep.calls == [7.0]  # the retry-after wait, and no write interval (0)
    assert [r.status for r in emulator.log] == [403, 201]
    assert len(emulator.comments[1]) == 1


def test_429_with_retry_after_waits_too(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(429, headers={"retry-after": "3"}, body={"message": "slow down"}))
    sleep = FakeSleep()
    make_client(emulator, sleep).get_json(ISSUES)
    assert sleep.calls == [3.0]


def test_primary_rate_limit_waits_until_reset(emulator: GitHubEmulator) -> None:
    now = 1_700_000_000.0
    emulator.faults.append(primary_rate_limit(reset_at=now + 120))
    sleep = FakeSleep()
    client = make_client(emulator, sleep, clock=lambda: now)
    assert client.get_json(ISSUES) == []
    assert sleep.calls == [121.0]  # until the reset, plus a second of margin


def test_primary_rate_limit_beyond_max_wait_gives_up(emulator: GitHubEmulator) -> None:
    now = 1_700_000_000.0
    emulator.faults.append(primary_rate_limit(reset_at=now + 7200))
    sleep = FakeSleep()
    client = make_client(emulator, sleep, clock=lambda: now, max_wait=900)
    with pytest.raises(GitHubRequestError, match=r"rate limit.*more than the 900 s"):
        client.get_json(ISSUES)
    assert sleep.calls == []
    assert len(emulator.log) == 1


def test_secondary_rate_limit_without_headers_backs_off_from_a_minute(
    emulator: GitHubEmulator,
) -> None:
    body = {"message": "You have exceeded a secondary rate limit."}
    emulator.faults.append(Fault(403, body=body, times=2))
    sleep = FakeSleep()
    make_client(emulator, sleep, max_wait=1000).get_json(ISSUES)
    assert sleep.calls == [60.0, 120.0]


def test_secondary_rate_limit_tries_are_bounded(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(429, body={"message": "slow"}, times=10))
    sleep = FakeSleep()
    with pytest.raises(GitHubRequestError, match="still rate limited"):
        make_client(emulator, sleep, max_retries=3, max_wait=10_000).get_json(ISSUES)
    assert sleep.calls == [60.0, 120.0, 240.0]
    assert len(emulator.log) == 4


def test_forbidden_without_rate_limit_signs_is_not_retried(emulator: GitHubEmulator) -> None:
    emulator.faults.append(Fault(403, body={"message": "Resource not accessible by integration"}))
    with pytest.raises(GitHubRequestError, match="issues: write"):
        make_client(emulator).get_json(ISSUES)
    assert len(emulator.log) == 1


# -- writes and bodies ----------------------------------------------------------------------


def test_writes_are_serialized_and_spaced(emulator: GitHubEmulator) -> None:
    emulator.add_issue("target")
    sleep = FakeSleep()
    # A clock that stands still: every write after the first waits the whole interval, however
    # long the machine takes between them (real time could use the interval up first).
    client = make_client(emulator, sleep, write_interval=1.0, clock=lambda: 1_000.0)
    threads = [
        threading.Thread(target=client.post_json, args=(ISSUES + "/1/comments", {"body": f"c{n}"}))
        for n in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert len(emulator.comments[1]) == 8
    assert emulator.max_concurrent_writes == 1
    # Seven writes followed another one and had to wait out the interval.
    assert sleep.calls == [1.0] * 7


def test_reads_do_not_wait_for_the_write_interval(emulator: GitHubEmulator) -> None:
    sleep = FakeSleep()
    client = make_client(emulator, sleep, write_interval=1.0)
    for _ in range(3):
        client.get_json(ISSUES)
    assert sleep.calls == []


def test_long_body_is_capped_and_the_cut_stated(emulator: GitHubEmulator) -> None:
    client = make_client(emulator)
    issue = client.post_json(ISSUES, {"title": "long", "body": "x" * 70_000})
    stored = emulator.issues[issue["number"]]["body"]
    assert len(stored) == BODY_LIMIT - 1  # cap_body's limit: one under GitHub's
    assert stored.startswith("x" * 60_000)
    assert "70,000 characters" in stored and "65,536" in stored


def test_cap_body_keeps_short_text() -> None:
    assert cap_body("short") == "short"
    assert len(cap_body("y" * 100_000)) == BODY_LIMIT - 1


def test_body_too_long_is_a_422_with_githubs_reason(emulator: GitHubEmulator) -> None:
    client = make_client(emulator)
    with pytest.raises(GitHubRequestError, match="body is too long") as caught:
        client.request("POST", ISSUES, json={"title": "raw", "body": "z" * (BODY_LIMIT + 1)})
    assert caught.value.status == 422
    assert emulator.issues == {}


# -- pagination -----------------------------------------------------------------------------


def test_pagination_follows_repositories_links_as_given(emulator: GitHubEmulator) -> None:
    for n in range(250):
        emulator.add_issue(f"issue {n}", labels=("flaky-test",))
    emulator.add_issue("unlabelled")
    client = make_client(emulator)
    items = list(client.paginate(ISSUES, {"labels": "flaky-test", "state": "all"}))
    assert len(items) == 250
    assert len({i["number"] for i in items}) == 250
    assert [r.path for r in emulator.log] == [
        ISSUES,
        "/repositories/1000/issues",
        "/repositories/1000/issues",
    ]
    assert [r.query.get("page") for r in emulator.log] == [None, ["2"], ["3"]]
    assert all(r.query["labels"] == ["flaky-test"] for r in emulator.log)


def test_pagination_refuses_to_follow_a_link_to_another_host(emulator: GitHubEmulator) -> None:
    link = '<https://evil.example/repositories/1/issues?page=2>; rel="next"'
    emulator.faults.append(Fault(200, body=[], headers={"link": link}))
    client = make_client(emulator)
    with pytest.raises(GitHubError, match=r"refusing to send the token to https://evil\.example"):
        list(client.paginate(ISSUES))
    assert len(emulator.log) == 1


# -- fidelity of the emulator ------------------------------------------------------------


def test_emulator_link_header_has_the_recorded_shape(emulator: GitHubEmulator) -> None:
    recorded = _fixture("paginate-issues.json")
    for n in range(13):
        emulator.add_issue(f"Test issue {n + 1}")
    client = make_client(emulator)
    response = client.request("GET", ISSUES, params={"per_page": 3})
    ours = response.headers["link"].replace(emulator.url, "https://api.github.com")
    assert ours == recorded[0]["headers"]["link"]
    second = client.request("GET", response.links["next"]["url"])
    ours = second.headers["link"].replace(emulator.url, "https://api.github.com")
    assert ours == recorded[1]["headers"]["link"]


def test_emulator_issues_carry_every_field_of_a_recorded_issue(emulator: GitHubEmulator) -> None:
    recorded = _fixture("paginate-issues.json")[0]["response"][0]
    emulator.add_issue("Test issue")
    ours = make_client(emulator).get_json(ISSUES)[0]
    assert set(recorded) - set(ours) == {"reactions"}
    assert {k: type(v) for k, v in ours["user"].items()} == {
        k: type(v) for k, v in recorded["user"].items()
    }


def test_emulator_validation_error_has_the_recorded_shape(emulator: GitHubEmulator) -> None:
    recorded = next(e for e in _fixture("errors.json") if e["status"] == 422)["response"]
    client = make_client(emulator)
    response = client._session.post(
        client.url("/repos/octo-org/octo-repo/labels"),
        json={"name": "bad", "color": "not-a-color"},
        headers={"Authorization": f"Bearer {emulator.token}"},
    )
    assert response.status_code == 422
    ours = response.json()
    assert set(ours) - set(recorded) == {"status"}  # GitHub now also sends the status
    assert set(recorded["errors"][0]) == set(ours["errors"][0])
    assert ours["errors"][0]["field"] == "color"


def test_recorded_responses_satisfy_the_schemas() -> None:
    """The schema check accepts what GitHub really sent (so its failures mean something)."""
    checked = 0
    for name, path in (
        ("paginate-issues.json", "/repos/octokit-fixture-org/paginate-issues/issues"),
        ("labels.json", "/repos/octokit-fixture-org/labels/labels"),
    ):
        for exchange in _fixture(name):
            method = exchange["method"].upper()
            if exchange["status"] >= 300 or method not in ("GET", "POST"):
                continue
            raw_path = exchange["path"].split("?")[0]
            if raw_path.startswith("/repositories/"):
                raw_path = path
            assert (
                schemas().response_errors(
                    method, raw_path, exchange["status"], exchange["response"]
                )
                == []
            )
            checked += 1
    # Every 2xx GET and POST: the 5 pages of issues, and of the labels the list, the one
    # created (201) and the one read back; the PATCH and the DELETE are not checked.
    assert checked == 8


def test_schema_check_catches_a_bad_request_and_a_bad_response() -> None:
    errors = schemas().request_errors("POST", ISSUES, {"title": "t", "labels": 5})
    assert any("5 is not of type 'array'" in e for e in errors)
    issue = _fixture("paginate-issues.json")[0]["response"][0]
    broken = dict(issue, number="thirteen")
    assert schemas().response_errors("GET", ISSUES + "/13", 200, broken)
    del broken["number"]
    assert any("number" in e for e in schemas().response_errors("GET", ISSUES + "/13", 200, broken))


def test_emulator_records_client_body_violations() -> None:
    with GitHubEmulator() as emu:
        client = make_client(emu)
        client.post_json(ISSUES, {"title": "ok", "labels": ["a"], "body": "fine"})
        assert emu.schema_errors == []
        emu.add_issue("x")
        client.request("PATCH", ISSUES + "/1", json={"state": "sideways"})
        assert any("sideways" in e for e in emu.schema_errors)


def test_test_data_does_not_need_shared() -> None:
    for name in ("openapi-excerpt.json", "OPENAPI-LICENSE", "fixtures/LICENSE.md"):
        assert (DATA / name).is_file()
    assert DATA.parent.parent == Path(__file__).parents[1]
    assert re.search(r"MIT", (DATA / "OPENAPI-LICENSE").read_text(encoding="utf-8"))


def test_after_an_outage_each_request_gets_one_try_until_one_succeeds(
    emulator: GitHubEmulator,
) -> None:
    sleep = FakeSleep()
    client = make_client(emulator, sleep, max_retries=3)
    emulator.faults.append(Fault(503, times=5))
    with pytest.raises(GitHubRequestError, match="503 4 times"):
        client.get_json(ISSUES)
    with pytest.raises(GitHubRequestError, match="503 1 times"):
        client.get_json(ISSUES)  # no backoff spent on an outage already confirmed
    assert len(sleep.calls) == 3
    assert client.get_json(ISSUES) == []
    emulator.faults.append(Fault(503, times=1))
    assert client.get_json(ISSUES) == []  # recovered: retried again as usual
    assert len(sleep.calls) == 4


class _StoppedClock(FakeSleep):
    """A clock that only the waits it records move: the time left is exact."""

    def now(self) -> float:
        return 1_000.0 + sum(self.calls)


class _TimeoutRecordingSession(requests.Session):
    def __init__(self) -> None:
        super().__init__()
        self.timeouts: list[Any] = []

    def request(self, *args: Any, **kwargs: Any) -> requests.Response:  # type: ignore[override]
        self.timeouts.append(kwargs.get("timeout"))
        return super().request(*args, **kwargs)


def test_deadline_cuts_timeouts_and_refuses_waits_that_outlast_it(
    emulator: GitHubEmulator,
) -> None:
    clock = _StoppedClock()
    session = _TimeoutRecordingSession()
    client = make_client(
        emulator, clock, clock=clock.now, deadline=10, timeout=(5.0, 30.0), session=session
    )
    emulator.faults.append(secondary_rate_limit(retry_after=7, times=2))
    with pytest.raises(GitHubRequestError, match="10 s deadline") as caught:
        client.get_json(ISSUES)
    assert caught.value.final
    assert clock.calls == [7]  # the second 7 s wait would have outlasted the 3 s left
    assert client.remaining() == 3.0
    # The read timeout is cut to the 10 s left, then both to the 3 s left after the wait.
    assert session.timeouts == [(5.0, 10.0), (3.0, 3.0)]
