"""Every ```python block in the README and docs/ runs.

Blocks of one page share a namespace, in order.
"""

import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES = [p for p in PAGES if "```python" in p.read_text()]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_code_blocks_run(page, tmp_path):
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    script = tmp_path / "page.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "MANIBO_CACHE_DIR": str(tmp_path / "cache")}
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=env,
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert result.returncode == 0, result.stderr[-3000:]
