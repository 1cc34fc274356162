"""Mirrors python/sglang/srt/plugins/__init__.py in sgl-project/sglang (read
2026-12-04): load_plugins() runs every `sglang.srt.plugins` entry point
(SGLANG_PLUGINS, comma-separated, is an allow-list) once per process; a
plugin that raises is logged, not fatal."""
from __future__ import annotations

import logging
import os
from importlib.metadata import entry_points

logger = logging.getLogger(__name__)
PLUGINS_GROUP = "sglang.srt.plugins"
_loaded = False


def load_plugins() -> None:
    global _loaded
    if _loaded:
        return
    _loaded = True
    allow = os.environ.get("SGLANG_PLUGINS")
    names = set(allow.split(",")) if allow else None
    for ep in entry_points(group=PLUGINS_GROUP):
        if names is not None and ep.name not in names:
            continue
        try:
            ep.load()()
        except Exception:
            logger.exception("Failed to load plugin %s", ep.name)
