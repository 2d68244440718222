"""The docs hold: every ```python block in the README and docs/ runs (the blocks of one page share
a namespace, in order), each block of a recipe page names only what it imports or defines itself,
and no user-facing text mentions how the project was planned.

A page runs as one script in a fresh process with an empty cache folder, as a new reader's first
run: a fork of one interpreter that has imported manibo (tests/script_runner.py)."""

import ast
import builtins
import os
import re
import symtable
from pathlib import Path

import pytest
from script_runner import ScriptRunner

ROOT = Path(__file__).parents[1]
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
PAGES = [p for p in PAGES if "```python" in p.read_text()]


@pytest.fixture(scope="module")
def runner():
    runner = ScriptRunner()
    yield runner
    runner.close()


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_code_blocks_run(page, tmp_path, runner):
    blocks = re.findall(r"```python\n(.*?)```", page.read_text(), flags=re.S)
    script = tmp_path / "page.py"
    script.write_text("\n\n".join(blocks))
    env = {**os.environ, "MANIBO_CACHE_DIR": str(tmp_path / "cache")}
    result = runner.run(script, tmp_path, env, timeout=300)
    assert result.returncode == 0, result.stderr[-3000:]


# Pages whose blocks a reader copies one at a time; the other pages tell one story, block by block.
RECIPE_PAGES = ["extending.md"]


def undefined_names(source: str) -> list[str]:
    """Names that ``source`` reads at module level, or as globals inside its functions and
    classes, without importing, assigning or defining them (builtins aside)."""
    table = symtable.symtable(source, "<block>", "exec")
    defined = {s.get_name() for s in table.get_symbols() if s.is_assigned() or s.is_imported()}
    read, scopes = set(), [table]
    while scopes:
        scope = scopes.pop()
        read |= {
            s.get_name()
            for s in scope.get_symbols()
            if s.is_referenced() and (scope is table or s.is_global())
        }
        scopes += scope.get_children()
    return sorted(read - defined - set(dir(builtins)))


@pytest.mark.parametrize("page", RECIPE_PAGES)
def test_each_block_of_a_recipe_page_imports_what_it_uses(page):
    blocks = re.findall(r"```python\n(.*?)```", (ROOT / "docs" / page).read_text(), flags=re.S)
    missing = {i + 1: names for i, block in enumerate(blocks) if (names := undefined_names(block))}
    assert not missing, f"blocks (1-based) that use names they do not import: {missing}"


def test_undefined_names_sees_globals_in_functions_and_classes_but_not_locals():
    source = (
        "import math\nfrom a import b\nc = 1\n\n"
        "class K:\n    size = torch.zeros(1)\n\n"
        "    def f(self, x):\n        y = x + c + b + math.pi\n        return np.sum(y, len(x))\n"
    )
    assert undefined_names(source) == ["np", "torch"]


# Words that point at how the project was planned rather than at what a user can read or run.
PLANNING = {
    "a planning document; cite the paper by authors and year": (
        r"\bseeds?\s*\d{3}\b|\bseed\s+documents?\b|shared/(?:seeds|reference)\b|\bDESIGN\.md\b"
        r"|\breference notes\b"
    ),
    "the project's issue tracker; cite an upstream issue as owner/repo#N": (
        r"\bissues?\s*#?\d+|\b(?:the|this|that|our)\s+issue\b|\bissue's\b"
    ),
    "a work session": r"\bsessions?\b",
    "a goal the project was set; state the measurement instead": (
        r"\btargets?:\s*(?:[<>≤≥~]|\d|within\b|under\b|below\b|above\b|at most\b|at least\b)"
        r"|\b(?:meets?|met|miss(?:es|ed)?)\s+(?:\S+\s+){0,3}targets?\b"
        r"|\btargets?\b[^.\n]{0,40}\b(?:is|was|are|were|be)\s+(?:not\s+|\*not\*\s+)?met\b"
        r"|\btargets?\s+(?:holds?|held)\b|\b(?:GPU|CPU|time|speed|memory)\s+targets?\b"
    ),
}


def planning_references(text: str) -> list[str]:
    """``"<what>: ...context..."`` for every mention of planning material in ``text``."""
    found = []
    for what, pattern in PLANNING.items():
        for match in re.finditer(pattern, text, flags=re.I):
            context = text[max(0, match.start() - 50) : match.end() + 30].replace("\n", " ")
            found.append(f"{what}: ...{context}...")
    return found


def user_texts():
    """``(file, text)``: the pages, the examples, and every string literal (docstrings, messages,
    printed and generated text) of the package and the benchmarks."""
    for path in [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]:
        yield path, path.read_text()
    for path in sorted((ROOT / "examples").glob("*.py")):
        yield path, path.read_text()
    for path in sorted([*(ROOT / "manibo").rglob("*.py"), *(ROOT / "benchmarks").glob("*.py")]):
        for node in ast.walk(ast.parse(path.read_text())):
            if isinstance(node, ast.Constant) and isinstance(node.value, str):
                yield path, node.value


def test_user_texts_do_not_mention_planning_material():
    hits = [
        f"{path.relative_to(ROOT)}: {hit}"
        for path, text in user_texts()
        for hit in planning_references(text)
    ]
    assert not hits, f"{len(hits)} mentions:\n" + "\n".join(hits)


@pytest.mark.parametrize(
    "text",
    [
        "as in seed 001 §4.4.1",
        "Seed 003, eq. 27",
        "see issue #21",
        "Issue 5's target",
        "the comparison the issue asks for",
        "ran in this session",
        "(target: 50×)",
        "targets: < 120 s, < 4 GB",
        "does not meet the 5 s target at N = 5000",
        "and on them the target was *not* met",
        "the GPU target (N = 5.9e6)",
        "So the target holds on this set",
    ],
)
def test_the_check_flags_planning_material(text):
    assert planning_references(text)


@pytest.mark.parametrize(
    "text",
    [
        "Dutordoir (2021), §4.4.1",
        "with random seed 0, seeds 90000–90199 and --seed 7",
        "geometric-kernels/GeometricKernels#147",
        "the geodesic distance to the target orientation",
        "targets are class indices; the closed-form target (default)",
        "a reachable target; squared distance of the end effector to a target",
    ],
)
def test_the_check_leaves_ordinary_words_alone(text):
    assert not planning_references(text)


def test_the_readme_leads_with_minimize_in_ten_lines():
    first = re.search(r"```python\n(.*?)```", (ROOT / "README.md").read_text(), flags=re.S)[1]
    code = [line for line in first.splitlines() if line.strip()]
    assert code[0].startswith("import") and "manibo.minimize(" in first and len(code) <= 10
