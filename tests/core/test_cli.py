"""The `tokenbox` command: every sub-command, its output, and one clean line for every bad input."""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core import get_counter
from tokenbox_core.cli import main

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
EXAMPLE_JSON = str(EXAMPLES / "support_bot.json")
EXAMPLE_TOML = str(EXAMPLES / "support_bot.toml")


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    code = main(list(argv))
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def assert_one_line_error(code: int, err: str, *fragments: str) -> None:
    assert code == 2
    assert err.startswith("tokenbox: error: ")
    assert err.count("\n") == 1 and err.endswith("\n")
    assert "Traceback" not in err
    for fragment in fragments:
        assert fragment in err, err


def spec(budget: Any = 20, **extra: Any) -> dict[str, Any]:
    data: dict[str, Any] = {
        "budget": budget,
        "counter": "whitespace",
        "sections": [
            {"id": "policy", "content": "be brief and exact"},
            {"id": "notes", "content": " ".join(f"w{i}" for i in range(30)), "shrink": 1},
        ],
    }
    data.update(extra)
    return data


def write(tmp_path: Path, name: str, data: Any) -> str:
    path = tmp_path / name
    if isinstance(data, bytes):
        path.write_bytes(data)
    else:
        path.write_text(data if isinstance(data, str) else json.dumps(data), encoding="utf-8")
    return str(path)


# --------------------------------------------------------------------------- help, version, usage


@pytest.mark.parametrize("command", [[], ["demo"], ["layout"], ["count"], ["budget"], ["diff"]])
def test_help_on_every_command(capsys: pytest.CaptureFixture[str], command: list[str]) -> None:
    """`--help` prints usage for the tool and each command and exits 0."""
    code, out, _ = run(capsys, *command, "--help")
    assert code == 0
    assert out.startswith("usage: tokenbox")
    assert "--help" in out


def test_version(capsys: pytest.CaptureFixture[str]) -> None:
    """`--version` prints the package version."""
    from tokenbox_core import __version__

    code, out, _ = run(capsys, "--version")
    assert code == 0 and out.strip() == f"tokenbox {__version__}"


def test_missing_command_is_a_usage_error(capsys: pytest.CaptureFixture[str]) -> None:
    """Running `tokenbox` alone points at `tokenbox demo`, exit 2."""
    code, _, err = run(capsys)
    assert_one_line_error(code, err, "missing command", "tokenbox demo")


@pytest.mark.parametrize(
    ("argv", "fragment"),
    [
        (["frobnicate"], "invalid choice: 'frobnicate'"),
        (["demo", "--bogus"], "unrecognized arguments: --bogus"),
        (["demo", "--budget", "-5"], "must be > 0, got -5"),
        (["demo", "--budget", "lots"], "expected a whole number of tokens, got 'lots'"),
        (["layout"], "the following arguments are required: SPEC"),
        (["layout", EXAMPLE_JSON, "--jobs", "0"], "must be >= 1, got 0"),
        (["layout", EXAMPLE_JSON, "--jobs", "many"], "expected a number of processes or 'auto'"),
        (["budget", "--messages", "m.json"], "the following arguments are required: --model/-m"),
        (["diff", EXAMPLE_JSON], "the following arguments are required: B"),
    ],
)
def test_usage_errors_are_one_line(capsys: pytest.CaptureFixture[str], argv: list[str], fragment: str) -> None:
    """argparse errors print one `tokenbox: error:` line (with a --help hint) and exit 2."""
    code, _, err = run(capsys, *argv)
    assert_one_line_error(code, err, fragment, "--help")


# --------------------------------------------------------------------------- demo


def test_demo_prints_the_explain_table(capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox demo` prints the scenario, the explain table of every section and what to try next."""
    from tokenbox_core._demo import demo_layout

    code, out, err = run(capsys, "demo")
    assert code == 0 and err == ""
    assert demo_layout().explain() in out
    assert "8,192 gpt-4o tokens with 1,024 reserved" in out
    assert "tokenbox demo --budget 16384" in out


def test_demo_json_html_and_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--json` prints the layout as JSON, `--html` writes the report, `--messages` prints the chat messages."""
    html = tmp_path / "demo.html"
    code, out, _ = run(capsys, "demo", "--json", "--html", str(html))
    assert code == 0
    data = json.loads(out)
    assert data["sections"][0]["id"] == "policy"
    assert html.read_text(encoding="utf-8").startswith("<!DOCTYPE html>")
    code, out, _ = run(capsys, "demo", "--messages")
    messages = json.loads(out)
    assert code == 0 and messages[0]["role"] == "system" and messages[-1]["role"] == "user"


def test_demo_budget_option(capsys: pytest.CaptureFixture[str]) -> None:
    """`--budget` changes the window: a roomy one expands the documents."""
    code, out, _ = run(capsys, "demo", "--budget", "32768")
    assert code == 0
    line = next(x for x in out.splitlines() if x.startswith("documents"))
    assert "expanded" in line


def test_demo_budget_below_the_critical_sections(capsys: pytest.CaptureFixture[str]) -> None:
    """A demo window too small for the critical sections is one clear error line, exit 2."""
    code, _, err = run(capsys, "demo", "--budget", "200")
    assert_one_line_error(code, err, "critical sections need")


def test_html_to_an_unwritable_path(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Writing the report where no file can be written is one error line."""
    code, _, err = run(capsys, "demo", "--html", str(tmp_path / "missing-dir" / "x.html"))
    assert_one_line_error(code, err, "cannot write", "x.html")


# --------------------------------------------------------------------------- layout


@pytest.mark.parametrize("path", [EXAMPLE_JSON, EXAMPLE_TOML])
def test_layout_prints_the_explain_table(capsys: pytest.CaptureFixture[str], path: str) -> None:
    """`tokenbox layout SPEC` prints the same table as Layout.explain() for JSON and TOML specs."""
    from tokenbox_core.spec import load_spec

    code, out, err = run(capsys, "layout", path)
    assert code == 0 and err == ""
    assert out == load_spec(path).layout().explain() + "\n"


def test_layout_json_and_html(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--json` prints the canonical layout dict; `--html` writes the visual report."""
    html = tmp_path / "r.html"
    code, out, _ = run(capsys, "layout", EXAMPLE_JSON, "--json", "--html", str(html))
    assert code == 0
    data = json.loads(out)
    assert data["total_tokens"] <= data["max_tokens"]
    assert "<svg" in html.read_text(encoding="utf-8")


def test_unknown_model_is_not_an_error(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A spec naming an unknown model lays out with the cl100k_base fallback, and a warning says so."""
    path = write(tmp_path, "s.json", dict(spec(), counter="acme-private-model-cli"))
    code, out, err = run(capsys, "layout", path)
    assert code == 0
    assert err.startswith("tokenbox: warning: unknown model 'acme-private-model-cli': counting with cl100k_base")
    assert "register_model('acme-private-model-cli'" in err and err.count("\n") == 1
    assert "counter cl100k_base" in out


@pytest.mark.parametrize(
    ("content", "fragments"),
    [
        (None, ("no such file",)),
        ('{"budget": 10, "sections": [', ("invalid JSON at line 1",)),
        (spec(sections=[{"id": "a", "content": "x", "priorty": 2}]), ("unknown field 'priorty'", "'priority'")),
        (spec(budget=-100), ("budget must be >= 0, got -100",)),
        (spec(budget={"max_tokens": 100, "output_reserve": -1}), ("output_reserve must be >= 0",)),
        (b'{"budget": 10, "sections": [{"id": "\xff"}]}', ("s.json is not valid UTF-8", "byte 0xff at offset 36")),
        ("", ("the spec is empty",)),
        ({}, ("the spec is empty",)),
        (spec(sections=[]), ("sections is empty",)),
        (spec(budget=3), ("critical sections need 4 tokens but the budget is 3", "'policy'")),
        (spec(sections=[{"id": "a", "shrink": "lots"}]), ("shrink must be a number",)),
    ],
)
def test_layout_bad_input_is_one_line_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: Any, fragments: tuple[str, ...]
) -> None:
    """Each kind of bad spec gives one `tokenbox: error:` line naming the problem, exit 2, no traceback."""
    path = str(tmp_path / "missing.json") if content is None else write(tmp_path, "s.json", content)
    code, out, err = run(capsys, "layout", path)
    assert out == ""
    assert_one_line_error(code, err, *fragments)


def test_layout_toml_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A broken TOML spec is one error line naming the file."""
    path = write(tmp_path, "s.toml", "budget = = 3\n")
    code, _, err = run(capsys, "layout", path)
    assert_one_line_error(code, err, "s.toml: invalid TOML")


# --------------------------------------------------------------------------- batch layout


def _batch(tmp_path: Path, n: int = 6, bad_line: int | None = None) -> str:
    lines = []
    for i in range(n):
        if bad_line is not None and i + 1 == bad_line:
            lines.append('{"budget": -1, "sections": [{"id": "a"}]}')
        else:
            lines.append(json.dumps(dict(spec(budget=8 + i), name=f"spec-{i}")))
        if i == 1:
            lines.append("")  # blank lines are skipped
    return write(tmp_path, "specs.jsonl", "\n".join(lines) + "\n")


def test_batch_prints_one_line_per_spec_in_order_and_a_summary(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """A .jsonl file is laid out spec by spec: one result line each, in input order, then a summary on stderr."""
    code, out, err = run(capsys, "layout", _batch(tmp_path))
    assert code == 0
    lines = out.splitlines()
    assert [x.split(":")[0] for x in lines] == [f"line {n} spec-{i}" for i, n in enumerate([1, 2, 4, 5, 6, 7])]
    assert all("fingerprint" in x for x in lines)
    assert err.startswith("summary: 6 specs, 6 laid out, 0 failed")
    assert "[" not in err  # no progress bar when stderr is not a terminal


def test_batch_parallel_output_equals_serial_output(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--jobs 2` (worker processes) prints exactly what a serial run prints."""
    path = _batch(tmp_path, n=8)
    code1, serial, _ = run(capsys, "layout", path, "--json")
    code2, parallel, err = run(capsys, "layout", path, "--json", "--jobs", "2")
    assert code1 == code2 == 0
    assert parallel == serial
    assert [json.loads(x)["line"] for x in parallel.splitlines()] == [1, 2, 4, 5, 6, 7, 8, 9]
    assert "(2 jobs," in err


def test_batch_reports_bad_specs_and_exits_2(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A bad spec in a batch is one error line naming its line; the rest are still laid out; exit 2."""
    code, out, err = run(capsys, "layout", _batch(tmp_path, n=4, bad_line=3), "--json")
    assert code == 2
    results = [json.loads(x) for x in out.splitlines()]
    assert [r["ok"] for r in results] == [True, True, False, True]
    error_lines = [x for x in err.splitlines() if x.startswith("tokenbox: error:")]
    assert len(error_lines) == 1 and "specs.jsonl line 4: budget must be >= 0" in error_lines[0]
    assert "summary: 4 specs, 3 laid out, 1 failed" in err


def test_batch_progress_bar_only_on_a_terminal(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """When stderr is a terminal a tqdm progress bar (count, rate, ETA) is drawn there, never on stdout."""

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    fake = Terminal()
    monkeypatch.setattr(sys, "stderr", fake)
    code = main(["layout", _batch(tmp_path, n=3)])
    out = capsys.readouterr().out
    assert code == 0
    assert "3/3 [" in fake.getvalue() and "spec/s]" in fake.getvalue()
    assert "summary: 3 specs" in fake.getvalue()
    assert "spec/s" not in out


def test_batch_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An empty batch and --html with a batch are one-line errors."""
    empty = write(tmp_path, "empty.jsonl", "\n\n")
    code, _, err = run(capsys, "layout", empty)
    assert_one_line_error(code, err, "no specs in the file")
    code, _, err = run(capsys, "layout", _batch(tmp_path), "--html", str(tmp_path / "x.html"))
    assert_one_line_error(code, err, "--html works with one spec")


def test_batch_flag_reads_json_lines_whatever_the_extension(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`--batch` treats any file as JSON lines."""
    path = write(tmp_path, "specs.txt", json.dumps(spec()) + "\n" + json.dumps(spec(budget=9)) + "\n")
    code, out, _ = run(capsys, "layout", path, "--batch")
    assert code == 0 and len(out.splitlines()) == 2


# --------------------------------------------------------------------------- count


def test_count_files_and_total(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`tokenbox count` prints each file's tokens and a total, with the model's counter."""
    a = write(tmp_path, "a.txt", "hello world, this is a test")
    b = write(tmp_path, "b.txt", "naïve café ✓")
    code, out, _ = run(capsys, "count", a, b, "--model", "gpt-4o")
    counter = get_counter("gpt-4o")
    na, nb = counter.count("hello world, this is a test"), counter.count("naïve café ✓")
    lines = out.splitlines()
    assert code == 0 and len(lines) == 3
    assert lines[0].split() == [str(na), a] and lines[1].split() == [str(nb), b]
    assert lines[2].split()[:2] == [str(na + nb), "total"]


def test_count_stdin_and_json(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """With no file (or '-') `tokenbox count` reads stdin; --json prints a JSON object."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"one two three")))
    code, out, _ = run(capsys, "count", "--model", "whitespace", "--json")
    assert code == 0
    assert json.loads(out) == {
        "model": "whitespace",
        "counter": "whitespace",
        "files": [{"path": "<stdin>", "tokens": 3}],
        "total": 3,
    }


def test_count_unknown_model_falls_back(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An unknown model counts with cl100k_base instead of failing; stderr states the fallback."""
    path = write(tmp_path, "a.txt", "hello world")
    code, out, err = run(capsys, "count", path, "--model", "acme-llm-7-count", "--json")
    assert code == 0 and err.startswith(
        "tokenbox: warning: unknown model 'acme-llm-7-count': counting with cl100k_base"
    )
    assert json.loads(out)["counter"] == "cl100k_base"


def test_count_invalid_utf8_names_file_and_offset(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """Bytes that are not UTF-8 are one error line with the file name and the byte offset; exit 2."""
    data = b"ok text " + b"\xc3\x28 rest"
    path = write(tmp_path, "bad.txt", data)
    offset = data.index(b"\xc3")
    code, out, err = run(capsys, "count", path)
    assert out == ""
    assert_one_line_error(code, err, "bad.txt is not valid UTF-8", f"at offset {offset}")


def test_count_invalid_utf8_on_stdin(capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch) -> None:
    """Invalid UTF-8 on stdin is reported as <stdin>."""
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"\xff")))
    code, _, err = run(capsys, "count", "-")
    assert_one_line_error(code, err, "<stdin> is not valid UTF-8", "offset 0")


def test_count_missing_file_and_directory(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A missing file or a directory is one error line naming it."""
    code, _, err = run(capsys, "count", str(tmp_path / "nope.txt"))
    assert_one_line_error(code, err, "nope.txt: no such file")
    code, _, err = run(capsys, "count", str(tmp_path))
    assert_one_line_error(code, err, "is a directory")


# --------------------------------------------------------------------------- budget

MESSAGES = [
    {"role": "system", "content": "You are helpful."},
    {"role": "user", "content": "What is the capital of France?"},
    {"role": "assistant", "content": None, "tool_calls": [{"function": {"name": "lookup", "arguments": "{}"}}]},
]


def test_budget_calculator(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`tokenbox budget` prints the calculator's numbers for the model and messages."""
    from tokenbox_core import TokenBudgetCalculator

    path = write(tmp_path, "m.json", MESSAGES)
    expected = TokenBudgetCalculator().calculate("gpt-4o", MESSAGES, directive="Remember the user.")
    code, out, _ = run(capsys, "budget", "--model", "gpt-4o", "--messages", path, "--directive", "Remember the user.")
    assert code == 0
    rows = {line[:17].strip(): line[17:].strip() for line in out.splitlines()}
    assert rows["context window"] == f"{expected.context_window:,}"
    assert rows["messages"].startswith(f"{expected.messages_tokens:,}  (3 messages")
    assert rows["directive"] == f"{expected.directive_tokens:,}"
    assert rows["memory budget"] == f"{expected.memory_tokens:,}"
    assert "note:" not in out


def test_budget_json_and_unknown_model(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """An unknown model uses the fallback window with a note; --json prints every field."""
    path = write(tmp_path, "m.json", {"messages": MESSAGES})
    code, out, _ = run(capsys, "budget", "--model", "acme-llm", "--messages", path)
    assert code == 0 and "note: unknown model 'acme-llm': using the 8,192-token fallback window" in out
    code, out, _ = run(capsys, "budget", "-m", "gpt-4o", "--messages", path, "--json")
    data = json.loads(out)
    assert data["context_window"] == 128_000 and data["messages"] == 3 and "memory_tokens" in data


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ("", "the messages file is empty"),
        ("[{", "invalid JSON at line 1"),
        ({"role": "user"}, "expected a JSON list of messages"),
        (["hi"], "message 0 must be an object"),
        ([{"content": "hi"}], "message 0 needs a 'role' string"),
        ([{"role": "user", "content": 5}], "message 0: content must be a string"),
        (b"[\xfe]", "is not valid UTF-8"),
    ],
)
def test_budget_bad_messages(capsys: pytest.CaptureFixture[str], tmp_path: Path, content: Any, fragment: str) -> None:
    """A bad messages file is one error line, exit 2."""
    path = write(tmp_path, "m.json", content)
    code, _, err = run(capsys, "budget", "--model", "gpt-4o", "--messages", path)
    assert_one_line_error(code, err, fragment)


# --------------------------------------------------------------------------- diff


def test_diff_two_specs(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`tokenbox diff A B` prints token deltas and item changes; --json and --html work."""
    turn1 = dict(spec(budget=40), sections=[{"id": "h", "shrink": 1, "items": [{"id": "m1", "content": "hi there"}]}])
    turn2 = dict(
        spec(budget=40),
        sections=[
            {"id": "h", "shrink": 1, "items": [{"id": "m1", "content": "hi there"}, {"id": "m2", "content": "x y"}]}
        ],
    )
    a, b = write(tmp_path, "a.json", turn1), write(tmp_path, "b.json", turn2)
    code, out, _ = run(capsys, "diff", a, b)
    assert code == 0
    assert "layout diff: 2 → 4 tokens (+2)" in out and "added: m2" in out
    html = tmp_path / "d.html"
    code, out, _ = run(capsys, "diff", a, b, "--json", "--html", str(html))
    assert code == 0 and json.loads(out)["total_token_delta"] == 2
    assert "Layout diff" in html.read_text(encoding="utf-8")


def test_diff_errors(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """A missing or invalid spec in diff is one error line."""
    code, _, err = run(capsys, "diff", EXAMPLE_JSON, str(tmp_path / "gone.json"))
    assert_one_line_error(code, err, "gone.json: no such file")


# --------------------------------------------------------------------------- the installed entry point


def test_console_entry_point_bad_input_has_no_traceback(tmp_path: Path) -> None:
    """Run as a program, bad input prints one line and exits 2 (no traceback)."""
    path = write(tmp_path, "s.json", "{not json")
    env = dict(os.environ, TOKENBOX_OFFLINE="1")
    proc = subprocess.run(
        [sys.executable, "-m", "tokenbox_core.cli", "layout", path], capture_output=True, text=True, env=env, timeout=60
    )
    assert proc.returncode == 2
    assert proc.stdout == ""
    assert proc.stderr.count("\n") == 1 and proc.stderr.startswith("tokenbox: error: ")


def test_budget_help_prints_single_percent_signs(capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox budget --help` shows 15% and 5%, not argparse's escaped 15%% (issue 10 item 16)."""
    assert main(["budget", "--help"]) == 0
    out = capsys.readouterr().out
    assert "(15%, 500-4,096)" in " ".join(out.split()) and "5% safety" in " ".join(out.split())
    assert "%%" not in out


def test_schema_command_prints_the_spec_json_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox schema` prints the JSON Schema of the spec format, which names every top-level field."""
    assert main(["schema"]) == 0
    schema = json.loads(capsys.readouterr().out)
    assert schema["title"] == "TokenBox layout spec"
    assert set(schema["properties"]) == {
        "$schema",
        "name",
        "description",
        "budget",
        "counter",
        "separator",
        "mode",
        "sections",
    }
    assert schema["required"] == ["budget", "sections"]


@pytest.mark.parametrize(
    ("content", "fragment"),
    [
        ('{"budget": 9, "sections": [{"id": "\\ud800", "content": "x"}]}', "id is not valid Unicode"),
        (
            '{"budget": 9, "sections": [{"id": "h", "shrink": 1, "items": [], "omission_marker": "{nope}"}]}',
            "omission_marker template '{nope}' uses the field {nope}",
        ),
        ('{"budget": ' + "9" * 4301 + ', "sections": [{"id": "a"}]}', "invalid JSON: Exceeds the limit"),
    ],
)
def test_layout_bad_records_are_one_line_errors_with_exit_2(
    capsys: pytest.CaptureFixture[str], tmp_path: Path, content: str, fragment: str
) -> None:
    """Lone-surrogate ids, bad templates and 4,301-digit integers end in one error line and exit 2 (issue 10)."""
    code, _, err = run(capsys, "layout", write(tmp_path, "s.json", content))
    assert_one_line_error(code, err, fragment)


def test_budget_tool_calls_that_are_not_a_list_are_one_line_errors(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """`tool_calls` that is not a list of objects is a one-line error naming the message, exit 2."""
    path = write(tmp_path, "m.json", [{"role": "assistant", "content": "x", "tool_calls": 5}])
    code, _, err = run(capsys, "budget", "-m", "gpt-4o", "--messages", path)
    assert_one_line_error(code, err, "message 0: tool_calls must be a list of tool-call objects")
    huge = write(tmp_path, "h.json", '[{"role": "user", "content": "x", "n": ' + "9" * 4301 + "}]")
    code, _, err = run(capsys, "budget", "-m", "gpt-4o", "--messages", huge)
    assert_one_line_error(code, err, "invalid JSON: Exceeds the limit")


def test_batch_reports_every_bad_record_with_its_line_and_processes_the_rest(
    capsys: pytest.CaptureFixture[str], tmp_path: Path
) -> None:
    """Each bad record of a batch (of any kind) is one error line naming its line; good records are laid out."""
    good = json.dumps(spec())
    overflow = json.dumps({"budget": 2, "counter": "whitespace", "sections": [{"id": "a", "content": "x y z"}]})
    lines = [
        good,
        '{"budget": 9, "sections": [{"id": "\\ud800", "content": "x"}]}',
        overflow,
        '{"budget": ' + "9" * 4301 + ', "sections": [{"id": "a"}]}',
        '{"budget": 9, "sections": [{"id": "h", "shrink": 1, "items": [], "omission_marker": "{0}"}]}',
        good,
    ]
    path = write(tmp_path, "b.jsonl", "\n".join(lines) + "\n")
    code, out, err = run(capsys, "layout", path)
    assert code == 2
    assert [x.split(":")[0] for x in out.splitlines()] == ["line 1", "line 6"]
    errors = [x for x in err.splitlines() if x.startswith("tokenbox: error:")]
    assert [e.split(": ")[2] for e in errors] == [f"{path} line {n}" for n in (2, 3, 4, 5)]
    assert "critical sections need 3 tokens" in errors[1]
    assert "summary: 6 specs, 2 laid out, 4 failed" in err


def test_verbose_flag_logs_a_layout_summary(capsys: pytest.CaptureFixture[str], tmp_path: Path) -> None:
    """`tokenbox -v layout` adds the tokenbox logger's one-line DEBUG summary of the layout on stderr."""
    code, out, err = run(capsys, "-v", "layout", write(tmp_path, "s.json", spec()))
    assert code == 0 and "fingerprint" in out
    assert err.startswith("tokenbox: debug: layout: ") and "counter whitespace" in err
    code, _, err = run(capsys, "layout", write(tmp_path, "s.json", spec()))
    assert err == ""
