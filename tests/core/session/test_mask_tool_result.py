"""``mask_tool_result``: the masking placeholder as a session's compile shows it, for a framework's own in-place
masking (issue 32: LangChain's ``TokenBoxMaskingEdit`` calls it instead of the session's private view)."""

from __future__ import annotations

from tokenbox_core.session import MaskingConfig, mask_tool_result


def test_a_text_result_becomes_the_placeholder_with_its_ids() -> None:
    """A text result is the placeholder (tool, size, first line) with its role, ``tool_call_id`` and id kept."""
    result = {"role": "tool", "tool_call_id": "c1", "id": "t_4", "content": "line one\nline two"}
    shown = mask_tool_result(result, "grep", 12, MaskingConfig(preview_chars=20))
    assert shown == {
        **result,
        "content": '[tool result t_4 (grep, 12 tokens) masked to save room; it is archived whole: rehydrate("t_4"). '
        "First line: line one]",
    }


def test_text_parts_are_masked_and_media_or_excluded_tools_are_not() -> None:
    """Text parts are masked like a string; a result with an image part, or of an excluded tool, gives None."""
    masking = MaskingConfig(exclude_tools=("read_file",), placeholder="[{tool}: {preview}]")
    parts = {"role": "tool", "id": "t_1", "content": [{"type": "text", "text": "a"}, {"type": "text", "text": "b"}]}
    image = {"role": "tool", "id": "t_2", "content": [{"type": "image_url", "image_url": {"url": "x"}}]}
    assert mask_tool_result(parts, "grep", 3, masking) == {**parts, "content": "[grep: ab]"}
    assert mask_tool_result(image, "grep", 3, masking) is None
    assert mask_tool_result({"role": "tool", "id": "t_3", "content": "x"}, "read_file", 1, masking) is None
