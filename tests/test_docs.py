"""The gallery examples run, and the documentation builds with warnings as errors.

Both are slow (each example trains models; the docs build runs the whole gallery)
and marked so: ``python -m pytest -m slow tests/test_docs.py``.
"""

import importlib.util
import inspect
import os
import subprocess
import sys
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = sorted((ROOT / "examples").glob("plot_*.py"))

# Examples that need an optional package to run (never a run-time dependency).
OPTIONAL = {"plot_dask_scaleout.py": "distributed"}


def _env():
    env = dict(os.environ)
    env["MPLBACKEND"] = "Agg"
    # The examples are user code: run them as users would, not under the test
    # configuration that turns dependency warnings into errors.
    env.pop("PYTHONWARNINGS", None)
    return env


@pytest.mark.slow
@pytest.mark.parametrize("script", EXAMPLES, ids=[path.name for path in EXAMPLES])
def test_example_runs(script, tmp_path):
    if importlib.util.find_spec("matplotlib") is None:
        pytest.skip("the examples draw with matplotlib (pip install '.[doc]')")
    module = OPTIONAL.get(script.name)
    if module is not None and importlib.util.find_spec(module) is None:
        pytest.skip(f"{script.name} needs {module}")
    result = subprocess.run(
        [sys.executable, str(script)],
        cwd=tmp_path,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert result.returncode == 0, (
        f"{script.name} exited with {result.returncode}\n"
        f"--- stdout ---\n{result.stdout[-3000:]}\n"
        f"--- stderr ---\n{result.stderr[-3000:]}"
    )


@pytest.mark.slow
def test_docs_build(tmp_path):
    for module in ("sphinx", "pydata_sphinx_theme", "sphinx_gallery", "numpydoc"):
        if importlib.util.find_spec(module) is None:
            pytest.skip(f"building the docs needs {module} (pip install '.[doc]')")
    if importlib.util.find_spec("distributed") is None:
        pytest.skip("the gallery's scale-out example needs dask[distributed]")
    result = subprocess.run(
        [
            sys.executable,
            "-m",
            "sphinx",
            "-W",
            "--keep-going",
            "-b",
            "html",
            "-d",
            str(tmp_path / "doctrees"),
            str(ROOT / "doc"),
            str(tmp_path / "html"),
        ],
        cwd=ROOT,
        env=_env(),
        capture_output=True,
        text=True,
        timeout=2400,
    )
    assert result.returncode == 0, (
        f"sphinx-build -W failed ({result.returncode})\n"
        f"--- stderr ---\n{result.stderr[-5000:]}"
    )
    assert (tmp_path / "html" / "index.html").exists()
    assert (tmp_path / "html" / "auto_examples" / "index.html").exists()
    # One API page per public class and function exported at top level.
    import skderand

    for name in skderand.__all__:
        obj = getattr(skderand, name)
        if inspect.isclass(obj) or inspect.isfunction(obj):
            page = tmp_path / "html" / "generated" / f"skderand.{name}.html"
            assert page.exists(), f"no API page for skderand.{name}"
