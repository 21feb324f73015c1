"""The reports inside a downloaded artifact zip, read without trusting the zip.

An artifact is whatever the job uploaded: usually one report directory, sometimes
several (one per ``flakewarden run`` step), possibly crafted. Nothing is extracted to
disk; only members named ``report.json`` are read, each through the one validating
reader. A zip whose member names escape (``..``, absolute, drive letters,
backslashes), hold links, are encrypted, or repeat is refused whole; a member that
inflates past the limit or far past its compressed size (a zip bomb) is refused
while it is read, whatever its header claims.
"""

from __future__ import annotations

import dataclasses
import io
import stat
import typing
import zipfile
import zlib
from pathlib import PurePosixPath
from typing import Optional

from flakewarden.errors import ReportError
from flakewarden.model import RunReport
from flakewarden.outside_json import MAX_BYTES, decode
from flakewarden.reports.report_json import REPORT_JSON, parse_report

MAX_MEMBERS = 100_000
MAX_REPORT_BYTES = MAX_BYTES  # one report.json, inflated: what any outside file is read to
MAX_RATIO = 200  # inflated / compressed, past the first 8 MB (real reports: under 30)
_RATIO_FROM = 8 * 1024 * 1024
_CHUNK = 1 << 20


@dataclasses.dataclass
class ZippedReport:
    """One ``report.json`` of the zip: its member path, and the report or why not."""

    member: str
    report: Optional[RunReport] = None
    error: str = ""


class UnsafeZip(ReportError):
    """The artifact is not a zip, or one this reader refuses to open."""


def _check_name(name: str) -> None:
    path = PurePosixPath(name)
    if (
        not name
        or "\\" in name
        or "\0" in name
        or name.startswith("/")
        or ".." in path.parts
        or (len(name) > 1 and name[1] == ":")
    ):
        raise UnsafeZip(f"the zip holds an unsafe member name {name[:200]!r}")


def _inflate(archive: zipfile.ZipFile, info: zipfile.ZipInfo, limit: int) -> bytearray:
    """The member's bytes, grown in place (no list of chunks joined: one copy in memory)."""
    # Sized once from the header when it is within the limit (a lying header only costs
    # growth); growing chunk by chunk would copy the whole buffer at each reallocation.
    data = bytearray(min(max(info.file_size, 0), limit) + 1)  # +1: room to read the end
    size = 0
    with archive.open(info) as opened:
        stream = typing.cast(zipfile.ZipExtFile, opened)
        while True:
            if size == len(data):
                data.extend(bytes(_CHUNK))
            with memoryview(data) as view:
                read = stream.readinto(view[size : size + _CHUNK])
            if not read:
                break
            size += read
            if size > limit:
                raise ReportError(f"{info.filename} inflates past {limit:,} bytes: refused")
            if size > _RATIO_FROM and size > MAX_RATIO * max(1, info.compress_size):
                raise ReportError(
                    f"{info.filename} inflates more than {MAX_RATIO}:1 (a zip bomb?): refused"
                )
    del data[size:]
    return data


def reports_in_zip(data: bytes, *, max_report_bytes: int = MAX_REPORT_BYTES) -> list[ZippedReport]:
    """Every ``report.json`` in the zip (top level or in a directory), in member order.

    ``UnsafeZip`` when the whole zip is refused; a report that cannot be read is a
    ``ZippedReport`` with ``error`` set, the others still read.
    """
    try:
        archive = zipfile.ZipFile(io.BytesIO(data))
    except (zipfile.BadZipFile, ValueError, OSError) as exc:
        raise UnsafeZip(f"the artifact is not a readable zip ({exc})") from None
    with archive:
        infos = archive.infolist()
        if len(infos) > MAX_MEMBERS:
            raise UnsafeZip(f"the zip holds {len(infos):,} members, more than {MAX_MEMBERS:,}")
        names: set[str] = set()
        for info in infos:
            _check_name(info.filename)
            if info.filename in names:
                raise UnsafeZip(f"the zip holds {info.filename[:200]!r} twice")
            names.add(info.filename)
            if stat.S_ISLNK(info.external_attr >> 16):
                raise UnsafeZip(f"the zip holds a link, {info.filename[:200]!r}")
            if info.flag_bits & 0x1:
                raise UnsafeZip(f"the zip holds an encrypted member, {info.filename[:200]!r}")
        found: list[ZippedReport] = []
        for info in infos:
            if info.is_dir() or PurePosixPath(info.filename).name != REPORT_JSON:
                continue
            entry = ZippedReport(info.filename)
            try:
                # Decoded at once: the bytes are freed before the parse starts.
                text = decode(_inflate(archive, info, max_report_bytes), info.filename)
                entry.report = parse_report(text, info.filename)
                del text
            except ReportError as exc:
                entry.error = str(exc)
            except (
                zipfile.BadZipFile,
                zlib.error,
                NotImplementedError,  # a compression method zipfile lacks
                OSError,
                EOFError,
                ValueError,
            ) as exc:
                entry.error = f"{info.filename} cannot be inflated ({exc})"
            found.append(entry)
        return found
