"""Mirrors python/sglang/srt/mem_cache/__init__.py (package marker)."""
