"""Mirrors python/sglang/srt/__init__.py (package marker)."""
