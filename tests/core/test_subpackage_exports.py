"""Each subpackage's ``__init__`` lists only what users import (issue 22): its ``__all__`` is pinned here.

A name leaves a package's ``__all__`` only on purpose: the rest of the package is private (modules whose
names start with ``_``), imported from its module by the core and the tests; the adapters import public names
only (``tests/test_adapter_imports.py``).
"""

from __future__ import annotations

import importlib
import types

import pytest

EXPECTED_ALL: dict[str, list[str]] = {
    "batch": ["BatchError", "BatchSummary", "Engine", "RayUnavailable", "compile_batch", "run_tasks"],
    "cache": [
        "CacheAwareFit", "CacheRules", "CacheSimulation", "CacheWindow", "TurnCheck", "cache_breakpoints",
        "cache_rules", "rule_names", "simulate_cache", "with_cache_control",
    ],
    "chat": [
        "ChatCounter", "ConversationFit", "ConversationOverflow", "ConversationSections", "FRAMEWORK_ROLES",
        "MARKER_ID_PREFIX", "Marker", "OVERRIDE_KEY", "ReadMessages", "RemovedMessage", "Repaired", "ToolGroups",
        "check_conversation", "check_on_invalid", "checked_conversation", "conversation_problems",
        "conversation_sections", "fit_conversation", "place_markers", "read_conversation", "read_messages",
        "start_on_fixup", "tool_groups",
    ],
    "compiler": [
        "CompilationTrace", "CompiledContext", "CompilerConfig", "ContextCompiler", "DEFINITIONS", "Developer",
        "Evidence", "Memory", "PIIDetector", "Policy", "RankingWeights", "TaskState", "Tool", "UtilityFunction",
        "ablate",
    ],
    "defense": [
        "CompositeDetector", "DefendedLayout", "DefensePolicy", "DefenseReport", "Detection", "HeuristicDetector",
        "InjectionDetector", "NanoGuardDetector", "OutputCheck", "SourcePolicy", "TrustLevel", "check_output",
        "defend_sections",
        "defensive_layout", "hierarchy_statement", "sanitize",
    ],
    "media": [
        "ModalityInput", "ModelProfile", "MultiModalContext", "assemble_multimodal", "audio_tokens",
        "choose_detail", "crop_image", "downscale_to_fit", "get_model_profile", "image_size", "image_tokens",
        "max_image_tokens", "media_part_tokens", "remote_images", "video_tokens", "wav_seconds",
    ],
    "models": [
        "CalibratedCounter", "DEFAULT_CONTEXT_WINDOW", "EndpointCounter", "ModelProfile", "ReportedUsage",
        "UsageCalibrator", "find_model_profile", "get_model_profile", "read_usage", "register_profile",
        "registered_names", "suggest_model",
    ],
    # select keeps the Cupel vocabulary issue 3 made public (scorers, slicers, placers, presets, analysis):
    # composing them is the package's job; results' records, protocols and constants are private.
    "request": [
        "ContextSize", "ModelRequest", "PreparedRequest", "RequestWindow", "Trigger", "check_size", "check_trigger",
        "keep_tokens", "reached", "resolve_window", "schema_tokens", "thresholds",
    ],
    "select": [
        "ChronologicalPlacer", "CompositeScorer", "CountConstrainedKnapsackSlicer", "CountQuotaEntry",
        "CountQuotaSlicer", "DecayScorer", "ExponentialDecay", "FrequencyScorer", "GreedySlicer", "KindScorer",
        "KnapsackSlicer", "MetadataKeyScorer", "MetadataTrustScorer", "PriorityScorer", "QuotaEntry", "QuotaSlicer",
        "RecencyScorer", "ReflexiveScorer", "ScaledScorer", "Selection", "SelectionPolicy", "SelectionReport",
        "StepDecay", "TagScorer", "UShapedPlacer", "WindowDecay", "agent_policy", "chat_policy",
        "code_review_policy", "marginal_items", "min_budget_for", "rag_policy", "tool_use_policy",
    ],
    "session": [
        "BLOCK_END", "ContextSession", "ExtractiveSummarizer", "ManagedContext", "ManagedHistory", "MaskingConfig",
        "MemorySessionStore", "MiniLMEmbedder", "ModelSummarizer", "OffloadConfig", "PROMPT_VERSION",
        "PostgresSessionStore", "REHYDRATE_DESCRIPTION", "RecallConfig", "SEARCH_DESCRIPTION", "SQLiteSessionStore",
        "SUMMARY_PROMPT", "SessionStore", "Summarizer", "Turn", "format_turns", "mask_tool_result", "open_store",
        "rehydrate", "search_archive",
    ],
    "structured": [
        "FORMATS", "Rendering", "TableFit", "aggregate", "cheapest", "fit_table", "parse", "render", "sample_rows",
        "select_columns", "select_rows",
    ],
    "tokens": [
        "COUNT_CACHE", "Keep", "PRIMING_TOKENS", "TokenCounter", "canonical_json", "content_text",
        "count_message_tokens", "get_counter",
    ],
}  # fmt: skip


@pytest.mark.parametrize("package", sorted(EXPECTED_ALL))
def test_the_subpackage_api_is_exactly_this(package: str) -> None:
    """Each subpackage's ``__all__`` is the pinned list, sorted, and names exactly its public attributes."""
    module = importlib.import_module(f"tokenbox_core.{package}")
    names = list(module.__all__)
    assert names == EXPECTED_ALL[package]
    assert names == sorted(names) and len(names) == len(set(names))
    public = {n for n, v in vars(module).items() if not n.startswith("_") and not isinstance(v, types.ModuleType)}
    assert public == set(names)


def test_errors_have_one_home() -> None:
    """The error classes are imported from ``tokenbox_core.errors`` (or the root), not re-exported by subpackages."""
    import tokenbox_core.errors as errors

    error_names = {n for n in vars(errors) if isinstance(getattr(errors, n), type) and n != "TokenBoxWarning"}
    for package in EXPECTED_ALL:
        assert not set(EXPECTED_ALL[package]) & error_names, package


def test_the_testing_package_ships_only_what_has_no_other_home() -> None:
    """``tokenbox_core.testing`` ships the example sections, the agent transcripts and the OpenAI and sequence
    checks; fake counters are ``get_counter``'s (``"whitespace"``, a callable such as ``len``), not a second class."""
    import tokenbox_core.testing as testing
    from tokenbox_core.tokens import get_counter

    assert testing.__all__ == [
        "agent_transcript", "assert_openai_chat", "make_sections", "openai_chat_problems", "sequence_problems"
    ]  # fmt: skip
    assert get_counter("whitespace").count("one two three") == 3 and get_counter(len).count("abc") == 3


DESIGN_NAMES = {
    "defense": {"sanitize", "InjectionDetector", "HeuristicDetector", "DefensePolicy", "check_output"},
    "session": {
        "SessionStore", "SQLiteSessionStore", "MemorySessionStore", "Summarizer", "ExtractiveSummarizer", "rehydrate",
        "ContextSession",
    },
    "media": {"image_tokens", "audio_tokens", "video_tokens", "ModelProfile", "get_model_profile"},
    "cache": {"simulate_cache"},
    "chat": {"fit_conversation"},
    "compiler": {"ContextCompiler", "CompilerConfig", "CompiledContext", "Evidence", "ablate"},
}  # fmt: skip


@pytest.mark.parametrize("package", sorted(DESIGN_NAMES))
def test_the_names_design_promises_stay_public(package: str) -> None:
    """Every name DESIGN.md lists for a subpackage is in its ``__all__``."""
    assert DESIGN_NAMES[package] <= set(EXPECTED_ALL[package])
