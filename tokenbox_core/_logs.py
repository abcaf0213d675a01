"""The ``tokenbox`` logger: fallbacks at WARNING, a one-line layout summary at DEBUG.

TokenBox never prints; it logs under the ``tokenbox`` logger (standard
:mod:`logging`), which has a ``NullHandler`` so that nothing appears unless
the application configures logging.  What is logged:

- ``WARNING``: every fallback a result depends on — an unknown model counted
  with ``cl100k_base``, an unknown model's context window taken as 8,192, a
  counter that only approximates (``"approximate"``, chars/4).  Each is logged
  once per name and process, not once per count.
- ``DEBUG``: one line per layout — total, budget, statuses, removed items,
  counter and fingerprint.

``tokenbox -v`` shows the warnings on stderr, ``-vv`` the debug lines too.

>>> import logging
>>> logging.getLogger("tokenbox").handlers[0].__class__.__name__
'NullHandler'
"""

from __future__ import annotations

import logging
import threading
from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from tokenbox_core.layout import Layout

__all__ = ["log_layout", "logger", "warn_once"]

logger = logging.getLogger("tokenbox")
logger.addHandler(logging.NullHandler())

_warned: set[tuple[str, str]] = set()
_warned_lock = threading.Lock()


def warn_once(topic: str, key: str, message: str) -> None:
    """Log ``message`` at WARNING the first time ``(topic, key)`` is seen in this process."""
    with _warned_lock:
        if (topic, key) in _warned:
            return
        _warned.add((topic, key))
    logger.warning(message)


def log_layout(layout: Layout) -> None:
    """One DEBUG line summarising a layout (built only when DEBUG is enabled for ``tokenbox``)."""
    if not logger.isEnabledFor(logging.DEBUG):
        return
    counts: dict[str, int] = {}
    for section in layout.sections:
        counts[section.status] = counts.get(section.status, 0) + 1
    statuses = ", ".join(f"{n} {status}" for status, n in counts.items())
    logger.debug(
        "layout: %s / %s tokens (%s), %s section(s): %s; %s item(s) removed; counter %s; fingerprint %s",
        f"{layout.total_tokens:,}",
        f"{layout.max_tokens:,}",
        layout.mode,
        len(layout.sections),
        statuses,
        len(layout.removed),
        layout.counter_name,
        layout.fingerprint[:12],
    )
