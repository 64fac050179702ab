"""The folder rtlforge keeps recomputable data in (plugin manifests, tool versions, models).

``$RTLFORGE_CACHE_DIR``, else ``$XDG_CACHE_HOME/rtlforge``, else ``~/.cache/rtlforge``; a
relative ``XDG_CACHE_HOME`` is ignored, as the XDG specification asks. Nothing is created here:
each user makes its own subfolder when it first writes, and treats a missing or unwritable one as
an empty cache.
"""

from __future__ import annotations

import os


def cache_dir(*parts: str) -> str:
    """``parts`` joined under the cache root."""
    root = os.environ.get("RTLFORGE_CACHE_DIR")
    if not root:
        xdg = os.environ.get("XDG_CACHE_HOME")
        base = xdg if xdg and os.path.isabs(xdg) else os.path.expanduser("~/.cache")
        root = os.path.join(base, "rtlforge")
    return os.path.join(root, *parts)
