"""`tokenbox compile SPEC`: the compiler from the command line."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from tokenbox_core.cli import main
from tokenbox_core.compiler._command import compile_spec

SPEC: dict[str, Any] = {
    "budget": {"max_tokens": 3000, "output_reserve": 500},
    "counter": "gpt-4o",
    "config": {
        "allocator": "utility",
        "quantum": 32,
        "clock": "2025-06-01T00:00:00+00:00",
        "freshness_half_life": 86400,
    },
    "policy": {"text": "You are Acme's support agent.", "version": "3"},
    "task": {"state": {"objective": "refund"}, "current_step": "refund order"},
    "tools": [{"name": "refund_order", "description": "Refund an order", "parameters": {"type": "object"}}],
    "evidence": [
        {
            "id": "kb-1",
            "text": "Refunds take 14 days.",
            "source": "kb://refunds",
            "retrieved_at": "2025-05-30T00:00:00+00:00",
            "authority": 0.9,
            "relevance": 0.8,
            "span": [0, 21],
        }
    ],
    "memory": [{"id": "m1", "text": "Prefers e-mail.", "relevance": 0.5, "created_at": "2025-05-01T00:00:00+00:00"}],
    "history": [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}],
    "user": "Refund order 1234?",
}


def write(tmp_path: Path, spec: dict[str, Any], name: str = "spec.json") -> str:
    path = tmp_path / name
    path.write_text(json.dumps(spec), encoding="utf-8")
    return str(path)


def test_explain_messages_text_and_json(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """Each output format prints the compiled context; the JSON carries the trace and the metrics."""
    path = write(tmp_path, SPEC)
    assert main(["compile", path]) == 0
    assert "allocator utility" in capsys.readouterr().out
    assert main(["compile", path, "--format", "messages"]) == 0
    messages = json.loads(capsys.readouterr().out)
    assert messages[0]["role"] == "system" and messages[-1]["content"].endswith("Refund order 1234?")
    assert main(["compile", path, "--format", "json"]) == 0
    document = json.loads(capsys.readouterr().out)
    assert document["messages"] == messages and document["trace"]["config_version"] == "1.0.0"
    assert set(document["metrics"]) >= {"budget_utilization", "staleness_index"}
    assert main(["compile", path, "--format", "text"]) == 0
    assert "Refund order 1234?" in capsys.readouterr().out


def test_toml_spec(tmp_path: Path) -> None:
    """A TOML spec compiles like its JSON twin."""
    path = tmp_path / "spec.toml"
    path.write_text('budget = 2000\npolicy = "Be brief."\nuser = "hi"\n[config]\noutput = "text"\n', encoding="utf-8")
    compiled = compile_spec(path)
    assert compiled.text.startswith("## SYSTEM_POLICY\nBe brief.")


def test_rejected_compilation_exits_1(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A compile that violates invariants lists them on stderr and exits 1."""
    spec = dict(SPEC, config={"required_sections": ["policy", "developer"]})
    assert main(["compile", write(tmp_path, spec)]) == 1
    assert "[required_sections] required section 'developer'" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("change", "message"),
    [
        ({"bogus": 1}, "unknown key 'bogus'"),
        ({"config": {"checks": []}}, "config.checks holds Python callables"),
        ({"config": {"allocatr": "utility"}}, "config has unknown field 'allocatr'"),
        ({"evidence": [{"id": "x", "text": "y", "source": "s", "authority": 1, "relevance": 1}]}, "retrieved_at"),
        (
            {
                "evidence": [
                    {"id": "x", "text": "y", "source": "s", "retrieved_at": "yesterday", "authority": 1, "relevance": 1}
                ]
            },
            "ISO 8601",
        ),
    ],
)
def test_bad_specs_exit_2_naming_the_problem(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], change: dict[str, Any], message: str
) -> None:
    """Bad specs are usage errors (exit 2) with a message naming the field."""
    assert main(["compile", write(tmp_path, {**SPEC, **change})]) == 2
    assert message in capsys.readouterr().err


def test_missing_budget_and_missing_file(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    """A spec without a budget, or a missing file, is a usage error."""
    spec = {k: v for k, v in SPEC.items() if k != "budget"}
    assert main(["compile", write(tmp_path, spec)]) == 2
    assert "needs a 'budget'" in capsys.readouterr().err
    assert main(["compile", str(tmp_path / "absent.json")]) == 2
    assert "cannot read compile spec" in capsys.readouterr().err


EXAMPLES = Path(__file__).resolve().parents[3] / "examples"


def test_shipped_compile_example_runs_in_json_and_toml(capsys: pytest.CaptureFixture[str]) -> None:
    """examples/support_compile.{json,toml} compile (defence on) to the same messages."""
    json_ctx = compile_spec(EXAMPLES / "support_compile.json")
    toml_ctx = compile_spec(EXAMPLES / "support_compile.toml")
    assert json_ctx.messages == toml_ctx.messages and json_ctx.defense is not None
    assert main(["compile", str(EXAMPLES / "support_compile.json")]) == 0
    assert "compiled" in capsys.readouterr().out


def test_a_layout_spec_is_refused_with_a_pointer_to_tokenbox_layout(capsys: pytest.CaptureFixture[str]) -> None:
    """Compiling examples/support_bot.json (a layout spec) says to run `tokenbox layout` and names the example."""
    assert main(["compile", str(EXAMPLES / "support_bot.json")]) == 2
    err = capsys.readouterr().err
    assert "is a layout spec" in err and "tokenbox layout" in err and "support_compile.json" in err


def test_defense_secret_comes_from_the_environment_never_the_file(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """config.defense.secret in a file is refused; secret_env names a variable, which must be set."""
    assert main(["compile", write(tmp_path, dict(SPEC, config={"defense": {"secret": "x" * 20}}))]) == 2
    assert "must not be written in a spec file" in capsys.readouterr().err
    spec = dict(SPEC, config={"defense": {"secret_env": "ACME_SECRET"}})
    monkeypatch.delenv("ACME_SECRET", raising=False)
    assert main(["compile", write(tmp_path, spec)]) == 2
    assert "names 'ACME_SECRET', which is not set" in capsys.readouterr().err
    monkeypatch.setenv("ACME_SECRET", "a-deployment-secret-of-some-length")
    compiled = compile_spec(write(tmp_path, spec))
    assert compiled.defense is not None and compiled.defense.key.origin == "config"
    assert main(["compile", write(tmp_path, dict(SPEC, config={"defense": {"spotlite": "datamark"}}))]) == 2
    assert "unknown field 'spotlite'; did you mean 'spotlight'?" in capsys.readouterr().err


def test_schema_compile_prints_the_compile_spec_schema(capsys: pytest.CaptureFixture[str]) -> None:
    """`tokenbox schema --compile` prints a JSON Schema the shipped example validates against."""
    jsonschema = pytest.importorskip("jsonschema")
    assert main(["schema", "--compile"]) == 0
    schema = json.loads(capsys.readouterr().out)
    jsonschema.validate(json.loads((EXAMPLES / "support_compile.json").read_text(encoding="utf-8")), schema)
    assert schema["title"] == "TokenBox compile spec"
