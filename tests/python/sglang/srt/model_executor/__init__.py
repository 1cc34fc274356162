"""Mirrors python/sglang/srt/model_executor/__init__.py (package marker)."""
