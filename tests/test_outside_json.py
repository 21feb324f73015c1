"""The one reader of outside JSON: totals (NaN, Infinity, depth, 64-bit integers, sizes) and
confinement (a link out of the directory, a FIFO, a device, a socket) are refused at once,
with one line naming the file and the field."""

from __future__ import annotations

import json
import os
import socket
import threading
from pathlib import Path

import pytest

from flakewarden.errors import ReportError
from flakewarden.outside_json import (
    INT_MAX,
    INT_MIN,
    MAX_CONTAINERS,
    MAX_DEPTH,
    MAX_STRING,
    MAX_VALUES,
    Refused,
    parse_json,
    read_confined,
    read_json,
)


@pytest.mark.parametrize(
    ("text", "why"),
    [
        ('{"duration": NaN}', "NaN is not a number JSON allows"),
        ('{"exit_code": Infinity}', "Infinity is not a number JSON allows"),
        ('{"exit_code": -Infinity}', "-Infinity is not a number JSON allows"),
        ('{"duration": 1e400}', "1e400 is out of a float's range"),
        ('{"run_id": ' + "1" + "0" * 30 + "}", "run_id is 1000000000000000000000000000000, out"),
        ('{"a": [1, ' + str(INT_MAX + 1) + "]}", f"a[1] is {INT_MAX + 1}, out of a 64-bit"),
        ('{"a": ' + str(INT_MIN - 1) + "}", f"a is {INT_MIN - 1}, out of a 64-bit"),
        ('{"n": ' + "9" * 5000 + "}", "cannot read r.json"),  # past Python's digit limit
        ("[" * 100_000 + "]" * 100_000, f"nested deeper than {MAX_DEPTH} levels"),
        ('{"a": ' + "[" * MAX_DEPTH + "]" * MAX_DEPTH + "}", "a[0]"),
        ('{"tests": [1', "cannot read r.json"),
        ("[" + "{}," * MAX_CONTAINERS + "{}]", f"more than {MAX_CONTAINERS:,} objects and arrays"),
        ("[" + "0," * MAX_VALUES + "0]", f"more than {MAX_VALUES:,} values"),
        (b'{"a": "\xff"}', "not UTF-8"),
    ],
    # The texts run to megabytes: as ids they would be test ids of megabytes.
    ids=lambda value: None if isinstance(value, str) and len(value) < 60 else "",
)
def test_outside_json_out_of_bounds_is_refused_naming_the_field(
    text: str | bytes, why: str
) -> None:
    with pytest.raises(Refused) as refused:
        parse_json(text, "r.json")
    message = str(refused.value)
    assert why in message and "r.json" in message and "\n" not in message
    assert isinstance(refused.value, ReportError) and isinstance(refused.value, ValueError)


def test_the_limits_themselves_are_kept() -> None:
    edge = {"a": [INT_MIN, INT_MAX, 1.5, -0.0, True, None, "x" * 1000]}
    assert parse_json(json.dumps(edge), "r.json") == edge
    nested = "[" * MAX_DEPTH + "]" * MAX_DEPTH
    assert parse_json(nested, "r.json") is not None
    many = "[" + "{}," * (MAX_CONTAINERS - 2) + "{}]"  # the outer array is one of them
    assert len(parse_json(many, "r.json")) == MAX_CONTAINERS - 1
    assert parse_json(b'{"k": "\xc3\xa9"}', "r.json") == {"k": "é"}


def test_brackets_commas_and_colons_inside_strings_are_not_counted_as_structure() -> None:
    """The first count takes every bracket, comma and colon; a text over a limit by it is
    counted again without its strings, and kept when its structure is within the limits."""
    many = "{}," * MAX_CONTAINERS + ':"\\"[' * (MAX_VALUES // 2)
    record = {"kind": "test", "id": "t.py::test[" + many + "]", "escaped": '\\"[{'}
    assert parse_json(json.dumps(record), "r.json") == record
    # The same count of containers outside a string is refused, escapes or not.
    with pytest.raises(Refused, match="more than 1,000,000 objects and arrays"):
        parse_json('["\\"", ' + "{}," * MAX_CONTAINERS + "{}]", "r.json")
    with pytest.raises(Refused, match=f"more than {MAX_VALUES:,} values"):
        parse_json('["[{\\\\", ' + "0," * MAX_VALUES + "0]", "r.json")


def test_a_string_past_the_limit_is_refused_naming_it() -> None:
    text = json.dumps({"tests": [{"longrepr": "x" * (MAX_STRING + 1)}]})
    with pytest.raises(Refused, match=r"tests\[0\]\.longrepr is a string of over"):
        parse_json(text, "r.json")
    key = json.dumps({"k" * (MAX_STRING + 1): 1})
    with pytest.raises(Refused, match="holds a key of over"):
        parse_json(key, "r.json")


def test_a_link_out_of_the_directory_is_refused_and_one_inside_followed(tmp_path: Path) -> None:
    shard = tmp_path / "shard"
    shard.mkdir()
    outside = tmp_path / "secret.json"
    outside.write_text('{"secret": 1}', encoding="utf-8")
    (shard / "report.json").symlink_to(outside)
    with pytest.raises(Refused, match="leads out of"):
        read_json(shard / "report.json", shard)
    (shard / "real.json").write_text('{"inside": 1}', encoding="utf-8")
    (shard / "alias.json").symlink_to("real.json")
    assert read_json(shard / "alias.json", shard) == {"inside": 1}
    # A directory link out of the shard too.
    (shard / "sub").symlink_to(tmp_path, target_is_directory=True)
    with pytest.raises(Refused, match="leads out of"):
        read_json(shard / "sub" / "secret.json", shard)


def test_a_fifo_is_refused_at_once_never_waited_on(tmp_path: Path) -> None:
    fifo = tmp_path / "report.json"
    os.mkfifo(fifo)
    result: list[BaseException] = []

    def read() -> None:
        try:
            read_confined(fifo)
        except BaseException as exc:
            result.append(exc)

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout=30)
    if reader.is_alive():  # it blocked: open a writer so the thread can end, then fail
        with open(fifo, "wb"):
            pass
        pytest.fail("reading a FIFO blocked")
    [refused] = result
    assert isinstance(refused, Refused) and "not a regular file (a FIFO)" in str(refused)


def test_a_device_a_socket_and_a_directory_are_refused(tmp_path: Path) -> None:
    with pytest.raises(Refused, match=r"not a regular file \(a device\)"):
        read_confined(Path("/dev/zero"), Path("/dev"))
    path = tmp_path / "s.json"
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        server.bind(str(path))
        with pytest.raises(Refused, match="cannot read"):
            read_confined(path)
    finally:
        server.close()
    (tmp_path / "d").mkdir()
    with pytest.raises(Refused, match=r"not a regular file \(a directory\)"):
        read_confined(tmp_path / "d")
    with pytest.raises(FileNotFoundError):
        read_confined(tmp_path / "none.json")


def test_a_file_past_the_limit_is_refused_while_read(tmp_path: Path) -> None:
    path = tmp_path / "big.json"
    path.write_bytes(b" " * 1001)
    with pytest.raises(Refused, match="more than 1,000 bytes"):
        read_confined(path, max_bytes=1000)
    assert read_confined(path, max_bytes=1001) == b" " * 1001


def test_an_integer_past_64_bits_beside_other_faults_is_still_one_refusal() -> None:
    for text in (
        '{"a": 99999999999999999999, "b": NaN}',
        '{"a": 99999999999999999999, "b": ' + "[" * 100_000 + "]" * 100_000 + "}",
        '{"a": [1, 99999999999999999999], "b": "x"}',
    ):
        with pytest.raises(Refused, match=r"r\.json: .*out of a 64-bit integer.s range: refused"):
            parse_json(text, "r.json")
