"""Reading reports out of artifact zips: several per artifact, and every hostile shape refused."""

from __future__ import annotations

import io
import stat
import warnings
import zipfile
from pathlib import Path

import pytest
from helpers.github_emulator_actions import zip_directory
from helpers.history_reports import report_dirs

from flakewarden.history.artifact_zip import UnsafeZip, reports_in_zip

__all__ = ["report_dirs"]  # the fixture


_WHEN = (2020, 1, 1, 0, 0, 0)  # fixed, so the same members make the same bytes in every process


def _zip(*members: tuple[str, bytes], link: str = "") -> bytes:
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w", zipfile.ZIP_DEFLATED) as archive, warnings.catch_warnings():
        warnings.simplefilter("ignore")  # a duplicate name is what one test wants
        for name, data in members:
            archive.writestr(zipfile.ZipInfo(name, _WHEN), data, zipfile.ZIP_DEFLATED)
        if link:
            info = zipfile.ZipInfo(link, _WHEN)
            info.external_attr = (stat.S_IFLNK | 0o777) << 16
            archive.writestr(info, "/etc/passwd")
    return buffer.getvalue()


def test_one_report_or_several(report_dirs: list[Path]) -> None:
    [single] = reports_in_zip(zip_directory(report_dirs[0]))
    assert single.member == "report.json" and single.error == ""
    assert single.report is not None and len(single.report.tests) == 3
    text = (report_dirs[1] / "report.json").read_bytes()
    found = reports_in_zip(_zip(("a/report.json", text), ("b/report.json", text), ("x.txt", b"")))
    assert [(f.member, f.report is not None) for f in found] == [
        ("a/report.json", True),
        ("b/report.json", True),
    ]


def test_a_corrupt_report_is_named_and_the_others_still_read(report_dirs: list[Path]) -> None:
    good = (report_dirs[0] / "report.json").read_bytes()
    found = reports_in_zip(
        _zip(
            ("ok/report.json", good),
            ("cut/report.json", good[: len(good) // 2]),
            ("old/report.json", b'{"schema": 99}'),
            ("latin/report.json", b'{"x": "\xe9"}'),
        )
    )
    errors = {f.member: f.error for f in found}
    assert errors["ok/report.json"] == ""
    assert errors["cut/report.json"].startswith("cannot read cut/report.json")
    assert "schema 99" in errors["old/report.json"]
    assert "not UTF-8" in errors["latin/report.json"]


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (_zip(("../report.json", b"{}")), "unsafe member name"),
        (_zip(("/abs/report.json", b"{}")), "unsafe member name"),
        (_zip(("c:/x/report.json", b"{}")), "unsafe member name"),
        (_zip(("a\\..\\report.json", b"{}")), "unsafe member name"),
        (_zip(("report.json", b"{}"), ("report.json", b"{}")), "twice"),
        (_zip(("report.json", b"{}"), link="attempts/evil"), "a link"),
        (b"PK\x03\x04 this is not a zip at all", "not a readable zip"),
        (b"", "not a readable zip"),
    ],
    ids=["parent", "absolute", "drive", "backslashes", "twice", "link", "not-a-zip", "empty"],
)
def test_a_hostile_zip_is_refused_whole(data: bytes, words: str) -> None:
    with pytest.raises(UnsafeZip, match=words):
        reports_in_zip(data)


def test_a_zip_bomb_is_refused_while_it_inflates() -> None:
    # 40 MB of spaces deflate to about 40 KB: refused once past 8 MB at over 200:1.
    bomb = _zip(("report.json", b" " * (40 << 20)))
    assert len(bomb) < 100_000
    [entry] = reports_in_zip(bomb)
    assert entry.report is None and "zip bomb" in entry.error
    # And past the size limit whatever the ratio (and whatever the header claims).
    [big] = reports_in_zip(_zip(("report.json", b"[" * (2 << 20))), max_report_bytes=1 << 20)
    assert big.report is None and "inflates past 1,048,576 bytes" in big.error
