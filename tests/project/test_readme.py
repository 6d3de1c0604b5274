"""README.md's ```python blocks run, and print what their `# comments` say.

Blocks run in order in one namespace (like reading the page top to bottom). A line
`print(...)  # expected` must print a line that starts with `expected`.
"""

import contextlib
import importlib.util
import io
import os
import pathlib
import re

README = os.path.join(
    os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "README.md"
)


def python_blocks():
    with open(README, encoding="utf-8") as fh:
        text = fh.read()
    return re.findall(r"^```python\n(.*?)^```", text, flags=re.S | re.M)


def expected_prints(block):
    """The comment after each single-line print(...) call, in order (None when absent)."""
    out = []
    for line in block.splitlines():
        m = re.match(r"\s*print\(.*?\)\s*(?:#\s*(.*))?$", line)
        if m:
            out.append(m.group(1).strip() if m.group(1) else None)
    return out


def test_readme_has_python_blocks():
    assert len(python_blocks()) >= 3


def test_set_up_commands_unchanged():
    # CI runs exactly these; the README's Set up section must keep them
    with open(README, encoding="utf-8") as fh:
        text = fh.read()
    setup = text.split("## Set up", 1)[1].split("\n## ", 1)[0]
    for command in ['pip install -e ".[dev]"', "pytest", "python examples/quickstart.py"]:
        assert f"\n    {command}\n" in setup


def test_readme_python_blocks_run_and_print_what_they_say():
    namespace = {"__name__": "readme"}
    has_scipy = importlib.util.find_spec("scipy") is not None
    has_dask = importlib.util.find_spec("distributed") is not None
    for i, block in enumerate(python_blocks()):
        if "tapegrad.scipy" in block and not has_scipy:
            continue  # the SciPy section needs the optional extra
        if "from distributed import" in block and not has_dask:
            continue  # Scaling out needs the distributed extra
        buf = io.StringIO()
        with contextlib.redirect_stdout(buf):
            exec(compile(block, f"README.md python block {i}", "exec"), namespace)
        printed = buf.getvalue().splitlines()
        expected = expected_prints(block)
        assert len(printed) == len(expected), (block, printed)
        for want, got in zip(expected, printed, strict=True):
            if want is not None:
                # the comment may go on with an explanation after two spaces
                want = re.split(r"\s{2,}", want)[0]
                assert got.startswith(want), f"block {i}: printed {got!r}, README says {want!r}"


def test_readme_benchmark_summary_comes_from_the_latest_full_run():
    """README's short benchmark table is rows of benchmarks/README.md's table, verbatim (both
    are written by one `python benchmarks/run.py --write`), with the same date."""
    root = pathlib.Path(__file__).resolve().parents[2]
    readme = (root / "README.md").read_text()
    full = (root / "benchmarks" / "README.md").read_text()
    summary = readme.split("<!-- summary:start -->")[1].split("<!-- summary:end -->")[0]
    table = full.split("<!-- table:start -->")[1].split("<!-- table:end -->")[0]
    rows = [line for line in summary.splitlines() if line.startswith("| ") and "---" not in line]
    assert len(rows) >= 10, "README's benchmark summary is missing: run benchmarks/run.py --write"
    for line in rows[1:]:
        assert line in table, f"README's benchmark row is not in the latest full run: {line}"
    date = re.search(r"Measured (\d{4}-\d\d-\d\d)", summary)
    assert date and f"Measured {date[1]}" in table
