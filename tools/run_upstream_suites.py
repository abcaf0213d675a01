"""Run LangChain's and LlamaIndex's own tests for the classes TokenBox replaces against TokenBox's drop-ins.

    python tools/run_upstream_suites.py CHECKOUT [CHECKOUT ...] [--only SUITE] [--keep]

Each CHECKOUT is a source tree holding the upstream tests: a checkout of ``langchain-ai/langchain`` (its
``libs/core`` and ``libs/langchain_v1``) or of ``run-llama/llama_index`` (its ``llama-index-core``), or one
package's unpacked sdist (``pip download --no-deps --no-binary :all: langchain-core==1.8.3``; LangChain's sdists
ship their tests, llama-index-core's do not).  Use the versions installed here (``pip show``).  Nothing fetched is
committed: the checkouts stay outside the repository.

For every suite below the chosen upstream test file (and the helpers it imports) is copied to a temporary
directory and run twice with pytest: once as is (the *baseline*, against the installed upstream class: a test that
fails there is version skew and is left out), and once with the upstream name replaced by TokenBox's drop-in (a
conftest installs the shim below before the test module is imported).  Each test that passes on the baseline and
fails on ours is classified:

- ``a``: a real incompatibility in ours (a bug; fix it, with a regression test in our suite);
- ``b``: a documented, deliberate difference (the reason names the docstring or README line);
- ``c``: the test pins an internal of the upstream class (a private method or attribute, an upstream-only
  option or metadata key) that a drop-in cannot share.

The verdicts are the tables below (by test name, then by the failure's message); revisit them when the upstream
versions change.  An unclassified failure is printed as ``?`` and makes the exit status 1; a test that passes
although it has a verdict is flagged so the verdict can go.
"""

from __future__ import annotations

import argparse
import os
import re
import shutil
import subprocess
import sys
import tempfile
import textwrap
import xml.etree.ElementTree as ET
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent


@dataclass(frozen=True)
class Suite:
    """One upstream test file run against one drop-in."""

    name: str
    dist: str
    test: str
    shim: str
    support: tuple[str, ...] = ()
    select: str | None = None
    classified: dict[str, tuple[str, str]] = field(default_factory=dict)
    patterns: tuple[tuple[str, str, str], ...] = ()


# ----------------------------------------------------------------------------------------------------- verdicts
# test name (without parameters) -> (class, reason).  Reasons for class b name the documenting line.

_TRIM: dict[str, tuple[str, str]] = {}

_CLEAR = {
    "test_clear_tool_outputs_and_inputs": (
        "b",
        "clear_tool_inputs=True (blank the call's args): context_edit.py 'the calls' arguments stay (no "
        "clear_tool_inputs: the model still sees what it asked, so it does not ask again)'",
    ),
    "test_clear_tool_outputs_and_inputs_async": ("b", "clear_tool_inputs=True: see the sync test"),
}

_SUMMARY = {
    **{
        name: ("c", "assigns middleware.token_counter after construction (ours counts with the counter it was given)")
        for name in (
            "test_and_trigger_conditions",
            "test_and_trigger_conditions_async",
            "test_backward_compatibility_tuple_trigger",
            "test_fraction_in_and_trigger",
            "test_mixed_and_or_conditions",
            "test_or_trigger_conditions_with_and_clauses",
            "test_or_trigger_conditions_with_and_clauses_async",
            "test_summarization_middleware_full_workflow_async",
            "test_summarization_middleware_multiple_triggers",
        )
    },
    "test_trigger_copies_mutable_inputs": (
        "c",
        "pins the trigger attribute's form (ours keeps the checked clauses as a tuple, out of callers' reach)",
    ),
    "test_summarization_middleware_profile_inference_triggers_summary": (
        "b",
        "compacts at the threshold now (>=, as upstream) and keeps [Message 3, Message 4]; the summary message starts "
        "with ours, 'Summary of the earlier conversation:' (agent_summary.py SUMMARY_PREFIX), not upstream's wording",
    ),
    "test_summarization_middleware_token_retention_preserves_ai_tool_pairs": (
        "b",
        "compacts now (keep is the kept messages' tokens, the summary on top, as upstream); ours keeps the human "
        "messages, where upstream keeps the AI+tool pair: a cut history restarts on a human message "
        "(FitOptions(start_on='human') in agent_summary.compact_state)",
    ),
    "test_string_summarizer_is_resolved_with_init_chat_model": (
        "c",
        "ours resolves 'provider:model' with langchain.chat_models.init_chat_model too; the test patches the name "
        "inside upstream's summarization module, so the real init_chat_model runs and needs langchain-openai",
    ),
    "test_summarization_middleware_missing_profile": (
        "b",
        "keep=('messages', 1) raises first (middleware.py: keep is ('tokens', n) or ('fraction', f)); ours needs "
        "budget= in persistent mode (middleware.py: 'persistent ... needs budget'), so no profile error",
    ),
    "test_empty_and_condition": ("c", "pins upstream's error wording for an empty clause (ours names the keys)"),
    **{
        f"test_summarization_middleware_validation_edge_cases[{which}-param_value{n}-Unsupported context size type]": (
            "c",
            "pins upstream's error wording for an unknown size kind (ours: BudgetError '... is not a context size')",
        )
        for which, n in (("keep", 7), ("trigger", 6))
    },
    "test_trigger_validation_errors": (
        "c",
        "pins upstream's error wording ('Unsupported trigger metric'); ours: BudgetError naming the allowed keys",
    ),
}
_SUMMARY_PATTERNS = (
    (
        r"keep=\('messages'",
        "b",
        "keep=('messages', n) is not offered: TokenBoxMiddleware keeps whole tool groups within a token size "
        '(middleware.py Args: \'keep: ... ("tokens", n) or ("fraction", f)\')',
    ),
    (r"is not a context size", "c", "pins upstream's error wording for a malformed size"),
    (r"DID NOT WARN", "c", "pins upstream's deprecated parameters (max_tokens_before_summary, messages_to_keep)"),
    (r"MagicMock", "c", "patches langchain's count_tokens_approximately with a MagicMock"),
    (r"has no summary_prompt", "c", "upstream-only option summary_prompt (ours writes with the core's prompt)"),
    (
        r"has no attribute '(model|token_counter|summary_prompt|trim_tokens_to_summarize|trigger_conditions)'",
        "c",
        "pins an attribute of the SummarizationMiddleware object",
    ),
    (
        r"Regex pattern did not match",
        "c",
        "pins upstream's error wording (ours raises BudgetError, a ValueError, with the numbers and the fix)",
    ),
)

_BUFFER = {
    "test_get_when_space_for_second_message_and_answer_removes_only_first_message_and_answer": (
        "b",
        "token_limit=5 holds upstream's text-only count; ours counts the chat overhead (memory.py: 'Sizes include "
        "the chat format's overhead') and the latest user message (10 tokens) is critical ('if they alone exceed "
        "token_limit, ContextCriticalOverflow')",
    ),
    "test_max_tokens": ("b", "token_limit=5: the same as the test above (MemoryOverflow, 10 tokens needed)"),
}

_SESSION_DOC = "session_memory.py, TokenBoxSessionMemory 'Differences from LlamaIndex's Memory': "
_MEMORY = {
    "test_manage_queue_first_message_must_be_user": (
        "b",
        _SESSION_DOC + "'nothing is returned over the memory's share: ... a latest user message that alone exceeds "
        "it raises MemoryOverflow'",
    ),
    "test_manage_queue_over_limit": (
        "b",
        _SESSION_DOC + "'when history is left out, one user-role message names it' (expected 1 message, got the "
        "pointer + 'z')",
    ),
    "test_manage_queue_preserves_conversation_turn": (
        "b",
        _SESSION_DOC + "'... right before the current user message, so two user messages follow each other there'",
    ),
    "test_manage_queue_with_tool_messages": (
        "b",
        _SESSION_DOC + "'messages a provider would reject (a tool result answering no call ...) raise "
        "ConversationError' (the test's role='tool' messages carry no tool_call_id)",
    ),
    "test_manage_queue_only_tool_message_remaining": ("b", "as test_manage_queue_with_tool_messages"),
    "test_memory_truncation_preserves_priority_zero": (
        "b",
        _SESSION_DOC + "'a priority-0 block ... that alone exceeds it raises MemoryOverflow (Memory returns it and "
        "overshoots)'",
    ),
}
for _kind in ("text", "image", "video", "audio", "document"):
    _MEMORY[f"test_estimate_token_count_{_kind}"] = (
        "c",
        "pins Memory._estimate_token_count (" + _SESSION_DOC + "'_estimate_token_count does not exist')",
    )

_HELPER = {
    "test_prompt_helper_truncate": (
        "b",
        "expected ['This is a test', 'Hello world bar foo'] (each chunk cut to 18 // 2 - 5 = 4 tokens); ours keeps "
        "both whole (10 tokens in 13): prompt_helper.py 'padding is reserved once, not once per chunk' and 'a short "
        "chunk takes only what it needs'",
    ),
}

SUITES = (
    Suite(
        "trim_messages",
        "langchain-core",
        "tests/unit_tests/messages/test_utils.py",
        "trim_messages",
        select="trim_messages",
        classified=_TRIM,
    ),
    Suite(
        "ClearToolUsesEdit",
        "langchain",
        "tests/unit_tests/agents/middleware/implementations/test_context_editing.py",
        "clear_tool_uses",
        classified=_CLEAR,
    ),
    Suite(
        "SummarizationMiddleware",
        "langchain",
        "tests/unit_tests/agents/middleware/implementations/test_summarization.py",
        "summarization",
        support=("tests/unit_tests/agents/model.py",),
        classified=_SUMMARY,
        patterns=_SUMMARY_PATTERNS,
    ),
    Suite(
        "ChatMemoryBuffer",
        "llama-index-core",
        "tests/memory/test_chat_memory_buffer.py",
        "chat_memory_buffer",
        classified=_BUFFER,
    ),
    Suite("Memory", "llama-index-core", "tests/memory/test_memory_base.py", "memory", classified=_MEMORY),
    Suite(
        "Memory (blocks)",
        "llama-index-core",
        "tests/memory/test_memory_blocks_base.py",
        "memory",
        classified=_MEMORY,
    ),
    *(
        Suite(f"chat engine: {name}", "llama-index-core", f"tests/chat_engine/test_{name}.py", "engines")
        for name in ("simple", "context", "condense_plus_context")
    ),
    Suite(
        "agents: ChatMemoryBuffer",
        "llama-index-core",
        "tests/agent/workflow/test_single_agent_workflow.py",
        "agents",
    ),
    Suite(
        "PromptHelper",
        "llama-index-core",
        "tests/indices/test_prompt_helper.py",
        "prompt_helper",
        support=("tests/mock_utils/mock_utils.py",),
        select="prompt_helper and not chat_prompt_helper",
        classified=_HELPER,
    ),
)

# ----------------------------------------------------------------------------------------------------- shims
# Called in the pytest process (by the generated conftest) before the upstream test module is imported.


def _patch(module: str, name: str, value: Any) -> None:
    import importlib

    setattr(importlib.import_module(module), name, value)


def _shim_trim_messages() -> None:
    from tokenbox_langchain import trim_messages

    _patch("langchain_core.messages.utils", "trim_messages", trim_messages)
    _patch("langchain_core.messages", "trim_messages", trim_messages)


def _shim_clear_tool_uses() -> None:
    from tokenbox_core.session import MaskingConfig
    from tokenbox_langchain._context_edit import CLEARED_PLACEHOLDER, TokenBoxMaskingEdit

    def clear_tool_uses_edit(
        *,
        trigger: int = 100_000,
        clear_at_least: int = 0,
        keep: int = 3,
        clear_tool_inputs: bool = False,
        exclude_tools: Any = (),
        placeholder: str | None = None,
    ) -> TokenBoxMaskingEdit:
        if clear_tool_inputs:
            raise NotImplementedError("TokenBoxMaskingEdit has no clear_tool_inputs")
        shown = CLEARED_PLACEHOLDER if placeholder is None else placeholder
        masking = MaskingConfig(keep_last=keep, exclude_tools=tuple(exclude_tools), placeholder=shown)
        del clear_at_least  # masking clears every old result once triggered: at least as much
        return TokenBoxMaskingEdit(trigger=trigger, masking=masking)

    _patch("langchain.agents.middleware.context_editing", "ClearToolUsesEdit", clear_tool_uses_edit)
    _patch("langchain.agents.middleware", "ClearToolUsesEdit", clear_tool_uses_edit)


_SUMMARY_DEFAULT_KEEP = ("messages", 20)


def _shim_summarization() -> None:
    from langchain_core.messages.utils import count_tokens_approximately

    from tokenbox_langchain import TokenBoxMiddleware

    def summarization_middleware(
        model: Any,
        *,
        trigger: Any = None,
        keep: Any = _SUMMARY_DEFAULT_KEEP,
        token_counter: Any = count_tokens_approximately,
        summary_prompt: Any = None,
        trim_tokens_to_summarize: Any = 4000,
        summarizer: Any = None,
        **deprecated: Any,
    ) -> TokenBoxMiddleware:
        if deprecated:
            raise NotImplementedError(f"TokenBoxMiddleware has no {sorted(deprecated)}")
        if summary_prompt is not None and summarizer is None:  # upstream ignores it beside a summarizer
            raise NotImplementedError("TokenBoxMiddleware has no summary_prompt (summarizer= takes a callable)")
        if isinstance(model, str):
            from langchain.chat_models import init_chat_model

            model = init_chat_model(model)
        profile = getattr(model, "profile", None) or {}
        window = profile.get("max_input_tokens") if isinstance(profile, dict) else None
        return TokenBoxMiddleware(
            budget=window if isinstance(window, int) and window > 0 else 10**9,
            summarizer=model if summarizer is None else summarizer,
            trigger=tuple(trigger) if isinstance(trigger, list) and len(trigger) == 2 else trigger,
            keep=None if keep == _SUMMARY_DEFAULT_KEEP else keep,
            token_counter=token_counter,
            persistent=True,
            name="SummarizationMiddleware",
        )

    _patch("langchain.agents.middleware.summarization", "SummarizationMiddleware", summarization_middleware)
    _patch("langchain.agents.middleware", "SummarizationMiddleware", summarization_middleware)


def _shim_chat_memory_buffer() -> None:
    from tokenbox_llamaindex import TokenBoxMemory

    _patch("llama_index.core.memory.chat_memory_buffer", "ChatMemoryBuffer", TokenBoxMemory)
    _patch("llama_index.core.memory", "ChatMemoryBuffer", TokenBoxMemory)


def _shim_memory() -> None:
    from tokenbox_llamaindex import TokenBoxSessionMemory

    _patch("llama_index.core.memory.memory", "Memory", TokenBoxSessionMemory)
    _patch("llama_index.core.memory", "Memory", TokenBoxSessionMemory)


def _replace_defaults(function: Any, old: Any, new: Any) -> None:
    """Replace ``old`` among ``function``'s default argument values (bound when it was defined)."""
    function = getattr(function, "__func__", function)
    if function.__defaults__:
        function.__defaults__ = tuple(new if value is old else value for value in function.__defaults__)


def _shim_engines() -> None:
    import importlib

    from llama_index.core.memory import Memory

    from tokenbox_llamaindex import TokenBoxSessionMemory

    _shim_chat_memory_buffer()
    for name in ("context", "simple", "condense_plus_context", "condense_question"):
        module = importlib.import_module(f"llama_index.core.chat_engine.{name}")
        module.Memory = TokenBoxSessionMemory  # type: ignore[attr-defined]
        for engine in vars(module).values():
            if isinstance(engine, type) and "from_defaults" in vars(engine):
                _replace_defaults(vars(engine)["from_defaults"], Memory, TokenBoxSessionMemory)


def _shim_agents() -> None:
    from tokenbox_llamaindex import TokenBoxMemory

    _shim_chat_memory_buffer()
    _patch("llama_index.core.agent.workflow.base_agent", "ChatMemoryBuffer", TokenBoxMemory)


def _shim_prompt_helper() -> None:
    from tokenbox_llamaindex import TokenBoxPromptHelper

    _patch("llama_index.core.indices.prompt_helper", "PromptHelper", TokenBoxPromptHelper)
    _patch("llama_index.core.indices", "PromptHelper", TokenBoxPromptHelper)
    _patch("llama_index.core", "PromptHelper", TokenBoxPromptHelper)


def install(shim: str) -> None:
    """Replace the upstream name of ``shim`` by TokenBox's drop-in (called by the generated conftest)."""
    {
        "trim_messages": _shim_trim_messages,
        "clear_tool_uses": _shim_clear_tool_uses,
        "summarization": _shim_summarization,
        "chat_memory_buffer": _shim_chat_memory_buffer,
        "memory": _shim_memory,
        "prompt_helper": _shim_prompt_helper,
        "engines": _shim_engines,
        "agents": _shim_agents,
    }[shim]()


_CONFTEST = '''\
"""Generated by tools/run_upstream_suites.py: the drop-in shim and an asyncio runner for async tests."""

import asyncio
import importlib.util
import inspect
import os
import sys

import pytest

os.environ["IS_TESTING"] = "1"  # as llama-index-core's tests/conftest.py: the "default" LLM is a MockLLM

if os.environ.get("TOKENBOX_UPSTREAM_MODE") == "ours":
    _spec = importlib.util.spec_from_file_location("_run_upstream_suites", {runner!r})
    _runner = sys.modules[_spec.name] = importlib.util.module_from_spec(_spec)
    _spec.loader.exec_module(_runner)
    _runner.install({shim!r})


@pytest.hookimpl(tryfirst=True)
def pytest_pyfunc_call(pyfuncitem):
    """Run ``async def`` tests in a fresh event loop (upstream uses pytest-asyncio's auto mode)."""
    if not inspect.iscoroutinefunction(pyfuncitem.obj):
        return None
    names = pyfuncitem._fixtureinfo.argnames
    asyncio.run(pyfuncitem.obj(**{{n: pyfuncitem.funcargs[n] for n in names}}))
    return True
'''

_INI = """\
[pytest]
pythonpath = .
markers =
    asyncio: an async test
    requires: needs a package
    scheduled: scheduled run
    compile: compile placeholder
    benchmark: benchmark
"""

# ----------------------------------------------------------------------------------------------------- running


def package_root(checkouts: list[Path], dist: str) -> Path | None:
    """The directory (holding ``tests/`` and a ``pyproject.toml`` naming ``dist``) among ``checkouts``."""
    for checkout in checkouts:
        for candidate in (checkout, checkout / "libs/core", checkout / "libs/langchain_v1", checkout / dist):
            project = candidate / "pyproject.toml"
            if not project.is_file() or not (candidate / "tests").is_dir():
                continue
            names = re.findall(r'(?m)^name\s*=\s*"([^"]+)"', project.read_text())  # [project] or [tool.poetry]
            if dist in names:
                return candidate
    return None


def _copy(root: Path, relative: str, into: Path) -> None:
    target = into / relative
    target.parent.mkdir(parents=True, exist_ok=True)
    shutil.copyfile(root / relative, target)
    for parent in Path(relative).parents:
        if parent == Path("."):
            continue
        init = into / parent / "__init__.py"
        if not init.exists():
            source = root / parent / "__init__.py"
            init.write_text(source.read_text() if source.exists() else "")


@dataclass
class Outcome:
    """One test's result in one run."""

    passed: bool
    message: str = ""


def _run(directory: Path, suite: Suite, mode: str) -> dict[str, Outcome]:
    report = directory / f"junit-{mode}.xml"
    command = [sys.executable, "-m", "pytest", suite.test, "-q", "-p", "no:cacheprovider", "-p", "no:randomly"]
    command += ["-c", "pytest.ini", "--rootdir", ".", f"--junitxml={report.name}", "-W", "ignore"]
    if suite.select:
        command += ["-k", suite.select]
    env = {**os.environ, "TOKENBOX_UPSTREAM_MODE": mode, "PYTHONPATH": f"{directory}{os.pathsep}{ROOT}"}
    done = subprocess.run(command, cwd=directory, env=env, capture_output=True, text=True, check=False)
    outcomes: dict[str, Outcome] = {}
    if not report.exists() or done.returncode not in (0, 1):
        print(f"pytest ({mode}) exited {done.returncode}:\n{done.stdout[-3000:]}{done.stderr[-3000:]}")
    if not report.exists():
        return outcomes
    for case in ET.parse(report).getroot().iter("testcase"):
        problem = case.find("failure")
        if problem is None:
            problem = case.find("error")
        if case.find("skipped") is not None:
            continue
        message = "" if problem is None else (problem.get("message") or problem.text or "").strip()
        outcomes[case.get("name", "?")] = Outcome(problem is None, message)
    return outcomes


_PRIVATE = re.compile(r"(?:has no attribute|does not have the attribute) '(_\w+)'")


def classify(suite: Suite, test: str, message: str) -> tuple[str, str]:
    """The class and reason of ``test``'s failure on ours: the table above, else the rules, else ``?``."""
    base = test.split("[", 1)[0]
    if test in suite.classified:
        return suite.classified[test]
    if base in suite.classified:
        return suite.classified[base]
    for pattern, kind, reason in suite.patterns:
        if re.search(pattern, message):
            return kind, reason
    private = _PRIVATE.search(message)
    if private:
        return "c", f"pins the upstream internal {private.group(1)}"
    return "?", "unclassified: " + message.splitlines()[0][:160] if message else "unclassified"


def run_suite(suite: Suite, root: Path, keep: bool) -> list[tuple[str, str, str, str]]:
    """Rows (test, baseline, ours, class + reason) of one suite."""
    directory = Path(tempfile.mkdtemp(prefix="upstream-" + re.sub(r"\W+", "-", suite.name) + "-"))
    try:
        for relative in (suite.test, *suite.support):
            _copy(root, relative, directory)
        (directory / "pytest.ini").write_text(_INI)
        (directory / "conftest.py").write_text(_CONFTEST.format(runner=str(Path(__file__).resolve()), shim=suite.shim))
        baseline = _run(directory, suite, "upstream")
        ours = _run(directory, suite, "ours")
    finally:
        if keep:
            print(f"kept {directory}")
        else:
            shutil.rmtree(directory, ignore_errors=True)
    rows = []
    for test in sorted(set(baseline) | set(ours)):
        up = baseline.get(test)
        mine = ours.get(test)
        if up is None or not up.passed:
            rows.append((test, "fail" if up else "-", "-", "skew: fails against the installed upstream too"))
        elif mine is not None and mine.passed:
            stale = test in suite.classified or test.split("[", 1)[0] in suite.classified
            rows.append((test, "pass", "pass", "(passes now: remove its verdict from the table)" if stale else ""))
        else:
            kind, reason = classify(suite, test, mine.message if mine else "not run")
            rows.append((test, "pass", "fail", f"{kind}: {reason}"))
    return rows


def main(argv: list[str] | None = None) -> int:
    """Run the suites and print the table; 1 when a failure is unclassified or a suite found no tests."""
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("checkouts", nargs="+", type=Path, help="upstream source trees (checkouts or sdists)")
    parser.add_argument("--only", action="append", help="run only this suite (repeatable)")
    parser.add_argument("--keep", action="store_true", help="keep the temporary directories")
    parser.add_argument("--verbose", action="store_true", help="print passing tests too")
    args = parser.parse_args(argv)
    status = 0
    summary = []
    for suite in SUITES:
        if args.only and suite.name not in args.only:
            continue
        root = package_root(args.checkouts, suite.dist)
        if root is None or not (root / suite.test).is_file():
            print(f"== {suite.name}: {suite.dist}'s {suite.test} not found in the checkouts given; skipped")
            continue
        rows = run_suite(suite, root, args.keep)
        print(f"== {suite.name} ({suite.dist}: {suite.test})")
        for test, up, mine, verdict in rows:
            if args.verbose or verdict:
                print(textwrap.shorten(f"  {test:<72} upstream={up:<4} ours={mine:<4} {verdict}", 400))
        counted = [r for r in rows if r[1] == "pass"]
        failed = [r[3][0] for r in counted if r[2] != "pass"]
        counts = {k: failed.count(k) for k in "abc?"}
        summary.append((suite.name, len(counted), len(counted) - len(failed), counts, len(rows) - len(counted)))
        if counts["?"] or not counted:
            status = 1
    print()
    print(f"{'suite':<34} {'run':>4} {'pass':>5} {'a':>3} {'b':>3} {'c':>3} {'?':>3} {'skew':>5}")
    for name, run, passed, counts, skew in summary:
        classes = " ".join(f"{counts[k]:>3}" for k in "abc?")
        print(f"{name:<34} {run:>4} {passed:>5} {classes} {skew:>5}")
    return status


if __name__ == "__main__":
    sys.exit(main())
