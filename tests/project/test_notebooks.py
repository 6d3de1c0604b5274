"""Every notebook in notebooks/ runs top to bottom without an error (nbclient, ipykernel's
python3 kernel), and is stored without outputs."""

import glob
import os

import pytest

# the dev and notebooks extras install nbformat, nbclient, ipykernel and matplotlib; without
# them the notebook tests skip (reading needs nbformat, running needs all four)
nbformat = pytest.importorskip("nbformat", reason="reading notebooks needs the notebooks extra")

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
NOTEBOOKS = sorted(glob.glob(os.path.join(ROOT, "notebooks", "*.ipynb")))


def test_there_are_notebooks():
    names = [os.path.basename(p) for p in NOTEBOOKS]
    assert {
        "01_autograd_basics.ipynb",
        "02_functional_and_trace.ipynb",
        "03_training.ipynb",
    } <= set(names)


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_stored_without_outputs(path):
    nb = nbformat.read(path, as_version=4)
    nbformat.validate(nb)
    for cell in nb.cells:
        if cell.cell_type == "code":
            assert cell.execution_count is None and cell.outputs == [], (
                f"{os.path.basename(path)} is stored with outputs; clear them before committing"
            )


@pytest.mark.parametrize("path", NOTEBOOKS, ids=os.path.basename)
def test_notebook_runs(path, monkeypatch):
    nbclient = pytest.importorskip("nbclient", reason="running notebooks needs the notebooks extra")
    pytest.importorskip("ipykernel", reason="running notebooks needs the notebooks extra")
    pytest.importorskip("matplotlib", reason="the notebooks plot with matplotlib")
    # the kernel inherits this environment: no GUI backend, and the single-threaded BLAS
    # that tests/conftest.py sets
    monkeypatch.setenv("MPLBACKEND", "Agg")
    nb = nbformat.read(path, as_version=4)
    client = nbclient.NotebookClient(
        nb,
        timeout=120,
        kernel_name="python3",
        resources={"metadata": {"path": os.path.dirname(path)}},
    )
    client.execute()  # raises CellExecutionError naming the failing cell
    errors = [
        o for c in nb.cells if c.cell_type == "code" for o in c.outputs if o.output_type == "error"
    ]
    assert not errors
