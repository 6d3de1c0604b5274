"""MkDocs hooks of the tapegrad site (see ``hooks:`` in mkdocs.yml).

- The home page is README.md, the benchmarks page benchmarks/README.md, and the notebooks are
  notebooks/*.ipynb, all read from where they live in the repository; every example script
  becomes a page showing its source.  README's links to those files are pointed at their pages.
- The Notebooks and Examples sections of the navigation list whatever is in those folders.
- A notebook page's table of contents links to the heading ids its HTML has.
- reference/operations.md is written from the imported package: every public name of
  ``tapegrad`` that no other reference page documents with ``::: tapegrad.NAME``, with its
  signature and docstring (the differentiable ops are made by factories, which mkdocstrings'
  static analysis cannot read), and the methods other modules attach to ``Tape`` and ``Tensor``.
"""

import glob
import html
import inspect
import json
import os
import re

import mkdocs.plugins
from mkdocs.structure.files import File
from mkdocs.structure.toc import get_toc

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DOCS = os.path.join(ROOT, "docs")


def _notebooks():
    return sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def _examples():
    return sorted(glob.glob(os.path.join(ROOT, "examples", "*.py")))


def _stem(path):
    return os.path.splitext(os.path.basename(path))[0]


def _notebook_title(path):
    """The notebook's first Markdown heading without its Markdown (else the file name)."""
    with open(path, encoding="utf-8") as fh:
        cells = json.load(fh)["cells"]
    for cell in cells:
        if cell["cell_type"] == "markdown":
            for line in "".join(cell["source"]).splitlines():
                if line.startswith("# "):
                    return line[2:].replace("`", "").strip()
    return _stem(path)


def on_config(config):
    nav = config["nav"]
    sections = [
        {
            "Notebooks": [
                {_notebook_title(p): f"notebooks/{os.path.basename(p)}"} for p in _notebooks()
            ]
        },
        {"Examples": [f"examples/{_stem(p)}.md" for p in _examples()]},
    ]
    config["nav"] = nav[:1] + sections + nav[1:]
    return config


@mkdocs.plugins.event_priority(100)  # before mkdocs-jupyter turns the notebooks into pages
def on_files(files, config):
    files.append(File.generated(config, "index.md", abs_src_path=os.path.join(ROOT, "README.md")))
    files.append(
        File.generated(
            config, "benchmarks.md", abs_src_path=os.path.join(ROOT, "benchmarks", "README.md")
        )
    )
    for path in _notebooks():  # a plain File: mkdocs-jupyter cannot wrap a generated one
        files.append(
            File(
                os.path.relpath(path, ROOT), ROOT, config["site_dir"], config["use_directory_urls"]
            )
        )
    for path in _examples():
        files.append(
            File.generated(config, f"examples/{_stem(path)}.md", content=_example_page(path))
        )
    files.append(File.generated(config, "reference/operations.md", content=_operations_page()))
    return files


def _example_page(path):
    with open(path, encoding="utf-8") as fh:
        source = fh.read()
    name = os.path.basename(path)
    return (
        f"# {name}\n\nRun it from a clone with `python examples/{name}`.\n\n"
        f"```python\n{source.rstrip()}\n```\n"
    )


README_LINKS = [
    (re.compile(r"\]\(docs/([^)]+)\)"), r"](\1)"),
    (re.compile(r"\]\(benchmarks/README\.md\)"), "](benchmarks.md)"),
    (re.compile(r"\]\(examples/([\w-]+)\.py\)"), r"](examples/\1.md)"),
]


def on_page_markdown(markdown, page, config, files):
    if page.file.src_uri == "index.md":
        for pattern, repl in README_LINKS:
            markdown = pattern.sub(repl, markdown)
    return markdown


HEADING = re.compile(r"<h([1-6])[^>]*\bid=\"([^\"]+)\"[^>]*>(.*?)</h\1>", re.S)


def on_page_content(html_text, page, config, files):
    """A notebook page's table of contents, read from the headings of its HTML.

    mkdocs-jupyter builds the table of contents from a Markdown conversion whose anchors drop
    the code in a heading (``## `tg.grad` of ...`` becomes ``#of-...``, ``## `no_grad``` becomes
    ``#_1``) while nbconvert's heading ids keep it; the links are therefore taken from the ids
    the page has.
    """
    if not page.file.src_uri.endswith(".ipynb"):
        return html_text
    root = {"level": 0, "children": []}
    stack = [root]
    for level, anchor, inner in HEADING.findall(html_text):
        text = re.sub(r"<a class=\"anchor-link\".*?</a>", "", inner, flags=re.S)
        name = html.escape(html.unescape(re.sub(r"<[^>]+>", "", text)).strip(), quote=False)
        token = {"level": int(level), "id": anchor, "name": name, "children": []}
        while stack[-1]["level"] >= token["level"]:
            stack.pop()
        stack[-1]["children"].append(token)
        stack.append(token)
    page.toc = get_toc(root["children"])
    return html_text


# ---- reference/operations.md ----------------------------------------------------------------


def _documented():
    """Names X of the ``::: tapegrad.X`` directives in the hand-written reference pages."""
    names = set()
    for path in glob.glob(os.path.join(DOCS, "reference", "*.md")):
        with open(path, encoding="utf-8") as fh:
            names.update(re.findall(r"^::: tapegrad\.(\w+)", fh.read(), flags=re.M))
    return names


def _escape(text):
    """Escape HTML outside `code spans`."""
    parts = re.split(r"(`[^`]*`)", text)
    return "".join(p if p.startswith("`") else html.escape(p, quote=False) for p in parts)


def _docstring_markdown(doc):
    """A docstring as Markdown: doctest examples fenced, section titles bold, text unindented."""
    out, indent, in_example = [], 0, False
    for line in doc.splitlines():
        text = line.strip()
        if text.startswith(">>>") and not in_example:
            in_example, indent = True, len(line) - len(line.lstrip())
            out.append("```pycon")
        if in_example:
            if text:
                out.append(line[indent:])
                continue
            out += ["```", ""]
            in_example = False
            continue
        if re.fullmatch(r"[A-Z]\w*( \w+)?:", text):
            out.append(f"**{text}**\n")
        else:
            out.append(_escape(text))
    if in_example:
        out.append("```")
    return "\n".join(out)


def _signature(obj):
    try:
        return str(inspect.signature(obj))
    except (TypeError, ValueError):
        return "(...)"


def _entry(title, obj, anchor):
    """A section on ``obj`` whose heading has the id ``anchor`` (``tapegrad.exp``), as
    mkdocstrings' headings have."""
    doc = inspect.getdoc(obj)
    body = _docstring_markdown(doc) if doc else "*No docstring yet.*"
    heading = f"## {title} {{ #{anchor} }}"
    return f"{heading}\n\n```python\n{title.strip('`')}{_signature(obj)}\n```\n\n{body}\n"


def _operations_page():
    import tapegrad as tg

    skip = _documented()
    groups = {}  # id(object) -> (object, [names bound to it])
    constants = []
    for name in sorted(n for n in dir(tg) if not n.startswith("_")):
        obj = getattr(tg, name)
        if name in skip or inspect.ismodule(obj) or inspect.isclass(obj):
            continue
        if not callable(obj):
            constants.append((name, obj))
            continue
        groups.setdefault(id(obj), (obj, []))[1].append(name)

    lines = [
        "# Operations",
        "",
        "Differentiable operations and the other public names of `tapegrad` that the "
        "pages before this one do not cover, as the imported package describes them. "
        "Each is `tg.NAME` after `import tapegrad as tg`; methods of the same names on "
        "`Tensor` and the NumPy functions dispatched to them are listed in the "
        "[Tensor](tensors.md) and [tapegrad.numpy](numpy.md) pages.",
        "",
    ]
    entries = []
    for obj, names in groups.values():
        main = getattr(obj, "__name__", names[0])
        main = main if main in names else names[0]
        others = [n for n in names if n != main]
        text = _entry(f"`tg.{main}`", obj, f"tapegrad.{main}")
        if others:
            aliases = ", ".join(f'<span id="tapegrad.{n}"></span>`tg.{n}`' for n in others)
            text += f"\nAlso available as {aliases}.\n"
        entries.append((main, text))
    lines += [text for _, text in sorted(entries)]
    if constants:
        lines += ["## Constants", ""]
        lines += [
            f'- <span id="tapegrad.{name}"></span>`tg.{name}` = `{value!r}`'
            for name, value in constants
        ]
        lines.append("")

    inspection = [  # the inspection methods, from Tape's and Tensor's inspection bases
        _entry(f"`{cls.__name__}.{name}`", getattr(cls, name), f"tapegrad.{cls.__name__}.{name}")
        for cls, names in ((tg.Tape, ("stats", "dump", "to_dot")), (tg.Tensor, ("to_dot",)))
        for name in names
    ]
    lines += [
        "# Tape and Tensor inspection",
        "",
        "Inspection methods of `tg.Tape` (see `tg.current_tape()`) and `tg.Tensor`.",
        "",
    ]
    lines += inspection
    return "\n".join(lines) + "\n"
