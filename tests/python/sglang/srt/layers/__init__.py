"""Mirrors python/sglang/srt/layers/__init__.py (package marker)."""
