"""Where commprof's sentences are made: the string literals of five words or more (an f-string's literal parts joined,
docstrings and log-free constants of one word left out) in each package, and the test asserts that pin a sentence of
six words or more (issue 62, item 5: every sentence is made in render/).

    python benchmarks/measure/words_outside_render.py

Prints a Markdown table (docs/architecture.md, "Where sentences are made")."""

from __future__ import annotations

import ast
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))  # the repository root, when run as a file
from benchmarks.common import REPO, table_header, table_row  # noqa: E402

SENTENCE_WORDS = 5
PINNED_WORDS = 6


def text_of(node: ast.AST) -> str | None:
    if isinstance(node, ast.Constant) and isinstance(node.value, str):
        return node.value
    if isinstance(node, ast.JoinedStr):
        return " ".join(v.value for v in node.values if isinstance(v, ast.Constant) and isinstance(v.value, str))
    return None


def docstrings(tree: ast.AST) -> set[int]:
    found = set()
    for node in ast.walk(tree):
        if isinstance(node, (ast.Module, ast.FunctionDef, ast.AsyncFunctionDef, ast.ClassDef)) and node.body:
            first = node.body[0]
            if isinstance(first, ast.Expr) and isinstance(first.value, ast.Constant):
                found.add(id(first.value))
    return found


def sentences(path: Path) -> tuple[int, int]:
    """The sentence literals of one module (outermost string nodes only: an f-string's parts are one), and how many of
    them are the message of an exception raised beside its check (issue 71, item 1: "short usage errors beside their
    checks may stay")."""
    tree = ast.parse(path.read_text())
    skip = docstrings(tree)
    inner = {id(v) for node in ast.walk(tree) if isinstance(node, ast.JoinedStr) for v in node.values}
    raised = {id(n) for node in ast.walk(tree) if isinstance(node, ast.Raise) and node.exc for n in ast.walk(node.exc)}
    patterns = {id(n) for node in ast.walk(tree) if _is_pattern(node) for n in ast.walk(node)}
    count = errors = 0
    for node in ast.walk(tree):
        text = text_of(node)
        if text is None or id(node) in skip or id(node) in inner or len(text.split()) < SENTENCE_WORDS:
            continue
        if id(node) in patterns:  # another program's words, matched (a regular expression): not commprof's own
            continue
        count += 1
        errors += id(node) in raised
    return count, errors


def _is_pattern(node: ast.AST) -> bool:
    """A call of the re module (re.compile, re.search, ...): its string arguments are patterns."""
    return (
        isinstance(node, ast.Call)
        and isinstance(node.func, ast.Attribute)
        and isinstance(node.func.value, ast.Name)
        and node.func.value.id == "re"
    )


def pinned(path: Path) -> int:
    """The asserts of a test module that hold a sentence literal of PINNED_WORDS or more."""
    tree = ast.parse(path.read_text())
    return sum(
        any((t := text_of(n)) is not None and len(t.split()) >= PINNED_WORDS for n in ast.walk(node))
        for node in ast.walk(tree)
        if isinstance(node, ast.Assert)
    )


def main() -> int:
    table_header("package", "modules", "sentence literals", "of which raised errors", "the others")
    for package in sorted(p for p in (REPO / "commprof").iterdir() if p.is_dir() and p.name != "__pycache__"):
        modules = sorted(package.rglob("*.py"))
        counted = [sentences(m) for m in modules]
        total, errors = sum(c for c, _ in counted), sum(e for _, e in counted)
        table_row(package.name, len(modules), total, errors, total - errors)
    tests = sorted((REPO / "tests").glob("test_*.py"))
    counts = {t.name: pinned(t) for t in tests}
    render = sum(n for name, n in counts.items() if name.startswith("test_render_"))  # render's own tests
    others = {name: n for name, n in counts.items() if n and not name.startswith("test_render_")}
    print(
        f"\ntest asserts pinning a sentence of {PINNED_WORDS}+ words: {render + sum(others.values())}; in render's "
        f"tests (test_render_*.py) {render}, in the others {sum(others.values())} in {len(others)} files"
    )
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
