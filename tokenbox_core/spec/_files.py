"""Reading spec files: strict UTF-8, JSON or TOML, errors that name the file and the place."""

from __future__ import annotations

import importlib
import json
import os
from typing import TYPE_CHECKING, Any

from tokenbox_core.errors import SpecError

if TYPE_CHECKING:
    from tokenbox_core.spec._build import LayoutSpec

__all__ = ["decode_utf8", "load_spec", "loads_spec", "read_text"]


def decode_utf8(data: bytes, source: str) -> str:
    """Strict UTF-8; the error names the source and the byte offset of the first bad byte."""
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        bad = data[exc.start : exc.start + 1].hex()
        raise SpecError(
            f"{source} is not valid UTF-8: byte 0x{bad} at offset {exc.start} ({exc.reason}); "
            f"re-encode the file as UTF-8"
        ) from None


def read_text(path: str) -> str:
    """Read a file as strict UTF-8, with errors that name the file."""
    try:
        with open(path, "rb") as fh:
            data = fh.read()
    except FileNotFoundError:
        raise SpecError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise SpecError(f"{path}: is a directory, expected a file") from None
    except OSError as exc:
        raise SpecError(f"{path}: cannot read ({exc.strerror or exc})") from None
    return decode_utf8(data, path)


def _parse_json(text: str, source: str) -> Any:
    try:
        return json.loads(text)
    except json.JSONDecodeError as exc:
        raise SpecError(f"{source}: invalid JSON at line {exc.lineno}, column {exc.colno}: {exc.msg}") from None
    except RecursionError:
        raise SpecError(f"{source}: JSON nested too deeply") from None
    except ValueError as exc:  # an integer over Python's 4,300-digit conversion limit
        raise SpecError(f"{source}: invalid JSON: {exc}; no spec field needs a number that long") from None


def _toml_module(source: str) -> Any:
    """``tomllib`` (Python 3.11+), else its backport ``tomli`` (a dependency on Python 3.10)."""
    for name in ("tomllib", "tomli"):
        try:
            return importlib.import_module(name)
        except ImportError:  # pragma: no cover - Python 3.10 without tomli
            continue
    raise SpecError(f"{source}: reading TOML on Python 3.10 needs tomli: pip install tomli")  # pragma: no cover


def _parse_toml(text: str, source: str) -> Any:
    tomllib = _toml_module(source)
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as exc:
        raise SpecError(f"{source}: invalid TOML: {exc}") from None
    except (ValueError, RecursionError) as exc:  # an integer over the digit limit, nesting too deep
        raise SpecError(f"{source}: invalid TOML: {exc}") from None


def loads_spec(text: str, *, fmt: str = "json", source: str = "<spec>") -> LayoutSpec:
    """Parse spec text (``fmt`` is ``"json"`` or ``"toml"``)."""
    from tokenbox_core.spec._build import parse_spec

    if text.startswith("\ufeff"):
        text = text[1:]
    if not text.strip():
        raise SpecError(f"{source}: the spec is empty; see `tokenbox layout --help` for the format")
    if fmt == "toml":
        return parse_spec(_parse_toml(text, source), source=source)
    if fmt == "json":
        return parse_spec(_parse_json(text, source), source=source)
    raise SpecError(f"{source}: unknown spec format {fmt!r}; use 'json' or 'toml'")


def load_spec(path: str | os.PathLike[str]) -> LayoutSpec:
    """Load a ``.json`` or ``.toml`` spec file (other extensions are read as JSON)."""
    path = os.fspath(path)
    fmt = "toml" if path.lower().endswith(".toml") else "json"
    return loads_spec(read_text(path), fmt=fmt, source=path)
