"""Mirrors python/sglang/srt/layers/attention/linear/__init__.py (package marker)."""
