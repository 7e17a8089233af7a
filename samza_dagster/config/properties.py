"""Reading Java-style .properties files and ``k=v`` overrides."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

from samza_dagster.config.errors import ConfigError

_ESCAPES = {"t": "\t", "n": "\n", "r": "\r", "f": "\f"}


def load_properties(path: str | Path) -> dict[str, str]:
    """Parse a .properties file: ``key=value`` or ``key: value`` or ``key value`` lines,
    ``#``/``!`` comments, backslash line continuations and escapes.

    Raises ConfigError when the file is missing or undecodable, naming the path.
    """
    p = Path(path)
    try:
        text = p.read_text(encoding="utf-8")
    except FileNotFoundError:
        raise ConfigError(f"config file not found: {p}") from None
    except UnicodeDecodeError as exc:
        raise ConfigError(f"config file {p} is not valid UTF-8: {exc}") from None
    except OSError as exc:
        raise ConfigError(f"cannot read config file {p}: {exc}") from None
    return parse_properties(text)


def parse_properties(text: str) -> dict[str, str]:
    result: dict[str, str] = {}
    for logical in _logical_lines(text.splitlines()):
        key, value = _split_key_value(logical)
        if key:
            result[key] = value
    return result


def parse_overrides(pairs: Iterable[str]) -> dict[str, str]:
    """``--config k=v`` arguments to a dict; a pair without ``=`` is a ConfigError."""
    result: dict[str, str] = {}
    for pair in pairs:
        key, sep, value = pair.partition("=")
        if not sep or not key.strip():
            raise ConfigError(f"--config expects key=value, got {pair!r}", key=key.strip() or pair)
        result[key.strip()] = value
    return result


def _logical_lines(lines: Iterable[str]) -> Iterable[str]:
    buffer = ""
    for raw in lines:
        line = raw.lstrip() if not buffer else raw.lstrip()
        if not buffer and (not line or line[0] in "#!"):
            continue
        if _ends_with_continuation(line):
            buffer += line[:-1]
            continue
        yield buffer + line
        buffer = ""
    if buffer:
        yield buffer


def _ends_with_continuation(line: str) -> bool:
    backslashes = len(line) - len(line.rstrip("\\"))
    return backslashes % 2 == 1


def _split_key_value(line: str) -> tuple[str, str]:
    key_chars: list[str] = []
    i = 0
    n = len(line)
    while i < n:
        ch = line[i]
        if ch == "\\" and i + 1 < n:
            key_chars.append(_unescape_char(line[i + 1]))
            i += 2
            continue
        if ch in "=: \t":
            break
        key_chars.append(ch)
        i += 1
    # skip whitespace, then at most one separator, then whitespace
    while i < n and line[i] in " \t":
        i += 1
    if i < n and line[i] in "=:":
        i += 1
    while i < n and line[i] in " \t":
        i += 1
    return "".join(key_chars), _unescape(line[i:])


def _unescape(value: str) -> str:
    if "\\" not in value:
        return value
    out: list[str] = []
    i = 0
    while i < len(value):
        ch = value[i]
        if ch == "\\" and i + 1 < len(value):
            nxt = value[i + 1]
            if nxt == "u" and i + 5 < len(value) + 0 and _is_hex(value[i + 2 : i + 6]):
                out.append(chr(int(value[i + 2 : i + 6], 16)))
                i += 6
                continue
            out.append(_unescape_char(nxt))
            i += 2
            continue
        out.append(ch)
        i += 1
    return "".join(out)


def _unescape_char(ch: str) -> str:
    return _ESCAPES.get(ch, ch)


def _is_hex(s: str) -> bool:
    return len(s) == 4 and all(c in "0123456789abcdefABCDEF" for c in s)
