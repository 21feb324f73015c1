"""The checks of one configuration value: each takes the key's path and the value, and
returns the value as the configuration holds it or raises ``ConfigError`` naming the path."""

from __future__ import annotations

import math
import re
import reprlib
from typing import Any, Callable, Optional

from flakewarden.config_yaml import SHOWN
from flakewarden.errors import ConfigError
from flakewarden.model.verdicts import (
    INCONCLUSIVE,
    NEVER_QUARANTINE,
    VERDICTS,
)

#: Seconds: ten days is no limit at all.
MAX_ATTEMPT_TIMEOUT = 10 * 24 * 3600.0

Check = Callable[[str, Any], Any]

#: The largest whole number any key takes.
MAX_WHOLE = 1_000_000_000

_repr = reprlib.Repr()
_repr.maxlevel, _repr.maxlist, _repr.maxtuple, _repr.maxdict = 2, 4, 4, 4
_repr.maxstring, _repr.maxother, _repr.maxlong = SHOWN, SHOWN, 40


def shown(value: Any) -> str:
    """A bad value as an error message quotes it: ``repr``, cut short, whatever its size."""
    text = _repr.repr(value)
    return text if len(text) <= SHOWN else text[: SHOWN - 1] + "…"


def whole(minimum: int, maximum: int = MAX_WHOLE) -> Check:
    def check(path: str, value: Any) -> int:
        if isinstance(value, bool) or not isinstance(value, int):
            raise ConfigError(f"{path}: expected a whole number, got {shown(value)}")
        if value < minimum:
            raise ConfigError(f"{path}: must be {minimum} or more, got {shown(value)}")
        if value > maximum:
            raise ConfigError(f"{path}: must be at most {maximum}, got {shown(value)}")
        return value

    return check


def number(low: float, high: float, *, low_open: bool = False) -> Check:
    def check(path: str, value: Any) -> float:
        if isinstance(value, bool) or not isinstance(value, (int, float)):
            raise ConfigError(f"{path}: expected a number, got {shown(value)}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ConfigError(f"{path}: expected a finite number, got {shown(value)}")
        if value > high or value < low or (low_open and value == low):
            bound = f"above {low:g}" if low_open else f"{low:g} or more"
            raise ConfigError(f"{path}: must be {bound} and at most {high:g}, got {shown(value)}")
        return float(value)

    return check


def boolean(path: str, value: Any) -> bool:
    if not isinstance(value, bool):
        raise ConfigError(f"{path}: expected true or false, got {shown(value)}")
    return value


def choice(path: str, value: Any, choices: tuple[str, ...]) -> str:
    if value not in choices:
        raise ConfigError(f"{path}: expected one of {', '.join(choices)}, got {shown(value)}")
    return str(value)


def plain_text(path: str, value: Any) -> str:
    if not isinstance(value, str) or not value.strip():
        raise ConfigError(f"{path}: expected a non-empty string, got {shown(value)}")
    return value


# CODEOWNERS' owner forms: @user, @org/team, an email address (``github.codeowners``).
_OWNER = re.compile(
    r"@[A-Za-z0-9](?:[A-Za-z0-9]|-(?=[A-Za-z0-9])){0,38}"
    r"|@[A-Za-z0-9][A-Za-z0-9-]{0,38}/[A-Za-z0-9][A-Za-z0-9_.-]{0,99}"
    r"|[^@\s]+@[^@\s]+\.[^@\s]+"
)


def owners(path: str, value: Any) -> tuple[tuple[str, tuple[str, ...]], ...]:
    """``owners:``, CODEOWNERS patterns to owners, in the file's order (the last match wins)."""
    if not isinstance(value, dict):
        raise ConfigError(
            f"{path}: expected a mapping of path patterns to owners, got {shown(value)}"
        )
    out = []
    for pattern, owners in value.items():
        where = f"{path}.{shown(pattern)}"
        if not isinstance(pattern, str) or not pattern.strip() or pattern.startswith("!"):
            raise ConfigError(
                f"{where}: expected a path pattern (no ! negation), got {shown(pattern)}"
            )
        names = [owners] if isinstance(owners, str) else owners
        if not isinstance(names, list) or not all(isinstance(n, str) for n in names):
            raise ConfigError(
                f"{where}: expected an owner or a list of owners, got {shown(owners)}"
            )
        for name in names:
            if not _OWNER.fullmatch(name):
                raise ConfigError(
                    f"{where}: {shown(name)} is not @user, @org/team or an email address"
                )
        out.append((pattern.strip(), tuple(names)))
    return tuple(out)


def label(path: str, value: Any) -> str:
    text = plain_text(path, value)
    if len(text) > 50 or any(c in text for c in ",\n\r"):
        raise ConfigError(
            f"{path}: a label name of at most 50 characters, no comma, got {shown(value)}"
        )
    return text


def optional_percent(path: str, value: Any) -> Optional[float]:
    return None if value is None else number(0, 100)(path, value)


def optional_seconds(path: str, value: Any) -> Optional[float]:
    return None if value is None else number(0, MAX_ATTEMPT_TIMEOUT, low_open=True)(path, value)


def verdicts(path: str, value: Any) -> tuple[str, ...]:
    if not isinstance(value, list) or not all(isinstance(v, str) for v in value):
        raise ConfigError(f"{path}: expected a list of verdicts, got {shown(value)}")
    for verdict in value:
        if verdict in NEVER_QUARANTINE:
            why = (
                "the runs ended before a knob's effect was found or ruled out"
                if verdict == INCONCLUSIVE
                else "a race or a real break must be fixed, not hidden"
            )
            raise ConfigError(f"{path}: {shown(verdict)} can never allow a quarantine ({why})")
        if verdict not in VERDICTS:
            raise ConfigError(
                f"{path}: unknown verdict {shown(verdict)}{nearest(verdict[:SHOWN], VERDICTS)}"
            )
    return tuple(value)


def optional_runs(path: str, value: Any) -> Optional[int]:
    return None if value is None else int(whole(1)(path, value))


def optional_days(path: str, value: Any) -> Optional[float]:
    return None if value is None else number(0, 3650, low_open=True)(path, value)


def webhook(path: str, value: Any) -> Optional[str]:
    if value is None:
        return None
    text = plain_text(path, value)
    if not re.match(r"https?://[^/\s@]+(/\S*)?$", text):
        raise ConfigError(f"{path}: expected an http(s) URL without a user name or password")
    return text


def patterns(path: str, value: Any) -> tuple[str, ...]:
    from flakewarden.model.rerun_policy import check

    items = [value] if isinstance(value, str) else value
    if not isinstance(items, list) or not items:
        raise ConfigError(f"{path}: expected a pattern or a list of patterns, got {shown(value)}")
    for item in items:
        try:
            check(item)
        except ValueError as exc:
            raise ConfigError(f"{path}: {str(exc)[:200]}") from None
    return tuple(items)


def nearest(key: str, choices: Any) -> str:
    import difflib  # here: only a misspelt key needs it, every run would pay its import

    match = difflib.get_close_matches(key, list(choices), n=1, cutoff=0.5)
    return f"; did you mean {match[0]!r}?" if match else ""
