"""Mirrors python/sglang/srt/layers/attention/__init__.py (package marker)."""
