"""Reading a configuration file's YAML: small, shallow and alias-poor, or one clear error."""

from __future__ import annotations

from typing import Any

from flakewarden.errors import ConfigError

#: A configuration file is a few hundred bytes; these bounds stop a hostile one
#: (an alias bomb, a deep nest, a 5,000-digit number) before it costs anything.
MAX_BYTES = 256 * 1024
MAX_ALIASES = 32
MAX_DEPTH = 20
MAX_SCALAR = 4096
SHOWN = 60


def load_yaml(text: str, where: str) -> Any:
    """The YAML document in ``text``, once it is known to be small, shallow and alias-poor."""
    import yaml  # only when there is a file to read

    if len(text) > MAX_BYTES:
        raise ConfigError(f"{where}: too large for a configuration file (over {MAX_BYTES} bytes)")
    try:
        _check_events(yaml.parse(text, Loader=yaml.SafeLoader), where)
        return yaml.safe_load(text)
    except yaml.YAMLError as exc:
        mark = getattr(exc, "problem_mark", None)
        at = f" at line {mark.line + 1}, column {mark.column + 1}" if mark is not None else ""
        problem = getattr(exc, "problem", None) or "invalid YAML"
        raise ConfigError(f"{where}: malformed YAML{at}: {problem}") from None
    except (ValueError, OverflowError, RecursionError) as exc:
        # e.g. an integer past Python's digit limit: a bad value, not a bug of ours
        raise ConfigError(f"{where}: unreadable value: {str(exc)[:SHOWN]}") from None


def _check_events(events: Any, where: str) -> None:
    """Refuse an alias bomb, a deep nest or a huge scalar while parsing, before building."""
    import yaml

    aliases = depth = 0
    for event in events:
        if isinstance(event, yaml.AliasEvent):
            aliases += 1
            if aliases > MAX_ALIASES:
                raise ConfigError(f"{where}: more than {MAX_ALIASES} YAML aliases (*name)")
        elif isinstance(event, (yaml.MappingStartEvent, yaml.SequenceStartEvent)):
            depth += 1
            if depth > MAX_DEPTH:
                raise ConfigError(f"{where}: nested deeper than {MAX_DEPTH} levels")
        elif isinstance(event, (yaml.MappingEndEvent, yaml.SequenceEndEvent)):
            depth -= 1
        elif isinstance(event, yaml.ScalarEvent) and len(event.value) > MAX_SCALAR:
            mark = event.start_mark
            at = f" at line {mark.line + 1}" if mark is not None else ""
            raise ConfigError(f"{where}: a value{at} is over {MAX_SCALAR} characters")
