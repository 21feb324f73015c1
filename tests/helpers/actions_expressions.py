"""GitHub's ``${{ }}`` expression language, as much as action.yml and the workflows use.

The simulated runner evaluates the action's defaults, ``env:``, ``with:``, ``if:`` and
outputs with it, so that a test sees the values GitHub would hand each step.
"""

from __future__ import annotations

import json
import re
from typing import Any, Optional, Union

Value = Union[str, bool, float, None, dict[str, Any]]

_TOKEN = re.compile(
    r"\s*(?:(?P<str>'(?:[^']|'')*')|(?P<num>\d+(?:\.\d+)?)|(?P<op>==|!=|<=|>=|&&|\|\||[!<>().\[\],])"
    r"|(?P<name>[A-Za-z_][A-Za-z0-9_-]*))"
)


def _tokens(text: str) -> list[tuple[str, str]]:
    out = []
    pos = 0
    text = text.strip()
    while pos < len(text):
        match = _TOKEN.match(text, pos)
        if not match or match.end() == pos:
            raise ValueError(f"cannot parse expression at {text[pos:]!r}")
        pos = match.end()
        kind = match.lastgroup
        assert kind is not None
        out.append((kind, match.group(kind)))
    return out


def _truthy(value: Value) -> bool:
    return value not in (None, False, "", 0, 0.0)


def to_string(value: Value) -> str:
    if value is None:
        return ""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, float):
        return str(int(value)) if value.is_integer() else str(value)
    if isinstance(value, dict):
        raise ValueError("an object is not a string")
    return str(value)


def _number(value: Value) -> float:
    if value is None or value == "":
        return 0.0
    if isinstance(value, bool):
        return 1.0 if value else 0.0
    if isinstance(value, (int, float)):
        return float(value)
    try:
        return float(str(value))
    except ValueError:
        return float("nan")


def _equal(left: Value, right: Value) -> bool:
    if isinstance(left, str) and isinstance(right, str):
        return left.casefold() == right.casefold()
    if type(left) is type(right):
        return left == right
    return _number(left) == _number(right)


class Evaluator:
    """GitHub's expression language, as much of it as action.yml and the workflows use."""

    def __init__(self, contexts: dict[str, Any], *, failed: bool = False) -> None:
        self.contexts = contexts
        self.failed = failed

    def evaluate(self, expression: str) -> Value:
        self.tokens = _tokens(expression)
        self.pos = 0
        value = self._or()
        if self.pos != len(self.tokens):
            raise ValueError(f"unexpected {self.tokens[self.pos]} in {expression!r}")
        return value

    def template(self, text: str) -> str:
        """A string with ``${{ }}`` parts, as env and with values are."""
        return re.sub(r"\$\{\{(.*?)\}\}", lambda m: to_string(self.evaluate(m.group(1))), text)

    def condition(self, text: str) -> bool:
        text = text.strip()
        if text.startswith("${{") and text.endswith("}}"):
            text = text[3:-2]
        return _truthy(self.evaluate(text))

    def _peek(self) -> Optional[tuple[str, str]]:
        return self.tokens[self.pos] if self.pos < len(self.tokens) else None

    def _take(self, op: str) -> bool:
        token = self._peek()
        if token is not None and token[0] == "op" and token[1] == op:
            self.pos += 1
            return True
        return False

    def _or(self) -> Value:
        value = self._and()
        while self._take("||"):
            right = self._and()
            value = value if _truthy(value) else right
        return value

    def _and(self) -> Value:
        value = self._compare()
        while self._take("&&"):
            right = self._compare()
            value = right if _truthy(value) else value
        return value

    def _compare(self) -> Value:
        value = self._unary()
        for op in ("==", "!="):
            if self._take(op):
                right = self._unary()
                same = _equal(value, right)
                return same if op == "==" else not same
        return value

    def _unary(self) -> Value:
        if self._take("!"):
            return not _truthy(self._unary())
        return self._primary()

    def _primary(self) -> Value:
        token = self._peek()
        if token is None:
            raise ValueError("expression ends early")
        self.pos += 1
        kind, text = token
        if kind == "op" and text == "(":
            value = self._or()
            assert self._take(")")
            return value
        if kind == "str":
            return text[1:-1].replace("''", "'")
        if kind == "num":
            return float(text)
        if kind == "name":
            if text in ("true", "false"):
                return text == "true"
            if text == "null":
                return None
            if text == "toJSON" and self._take("("):
                argument = self._or()
                assert self._take(")")
                return json.dumps(argument, indent=2)
            if self._take("("):
                assert self._take(")"), "only argument-less status functions are supported"
                return {"always": True, "success": not self.failed, "failure": self.failed}[text]
            value: Value = self.contexts.get(text)
            while True:
                if self._take("."):
                    kind, name = self.tokens[self.pos]
                    self.pos += 1
                    value = value.get(name) if isinstance(value, dict) else None
                elif self._take("["):
                    key = to_string(self._or())
                    assert self._take("]")
                    value = value.get(key) if isinstance(value, dict) else None
                else:
                    return value
        raise ValueError(f"unexpected {text!r}")
