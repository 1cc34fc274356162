"""Mirrors python/sglang/srt/speculative/__init__.py (package marker)."""
