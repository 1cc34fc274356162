"""Mirrors python/sglang/srt/configs/__init__.py (package marker)."""
