"""Reading a bench's JSON in the summaries: a file that is missing or cut short
(its tool timed out) reads as None, so a table shows '-' instead of failing."""
import json


def load(path):
    try:
        with open(path) as f:
            return json.load(f)
    except Exception:
        return None
