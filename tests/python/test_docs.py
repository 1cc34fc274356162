"""docs/python.md's example runs as written (a fresh interpreter, the
package from python/)."""
from __future__ import annotations

import os
import re
import subprocess
import sys

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def test_the_example_in_docs_python_md_runs(tmp_path):
    with open(os.path.join(REPO, "docs", "python.md"), encoding="utf-8") as f:
        text = f.read()
    m = re.search(r"<!-- make test-python runs the code block below[^>]*-->\n```python\n(.*?)```", text, re.S)
    assert m, "the marked example is missing from docs/python.md"
    script = tmp_path / "example.py"
    script.write_text(m.group(1))
    env = dict(os.environ, PYTHONPATH=os.path.join(REPO, "python"))
    r = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, env=env, cwd=tmp_path)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "['cpu_ref']" in r.stdout and "max difference:" in r.stdout
    assert "q has shape [5, 8, 64]; expected [19, 8, 64]" in r.stdout
