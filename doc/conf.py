"""Sphinx configuration for the skderand documentation.

Build (from the repository root)::

    pip install ".[doc]" && make -C doc html

which runs ``python -m sphinx -W --keep-going -b html doc doc/_build/html``:
warnings are errors. The API reference page (``api.rst``) is generated here from the
``__all__`` lists of the package, so every public class and function is documented
without a hand-kept list; the gallery runs every ``examples/plot_*.py`` that exists.

Intersphinx links to scikit-learn, numpy, scipy and joblib need the network. They
are enabled only when the inventories can be reached (a short probe), or forced on
or off with ``SKDERAND_DOC_INTERSPHINX=1`` / ``=0``; an offline build therefore
passes with ``-W`` (references to those projects are then rendered as plain text).
"""

import importlib
import inspect
import os
import re
import socket
import sys
from pathlib import Path

import skderand

DOC_DIR = Path(__file__).resolve().parent
ROOT = DOC_DIR.parent
sys.path.insert(0, str(DOC_DIR / "sphinxext"))  # gallery_order

# -- Project -----------------------------------------------------------------------

project = "skderand"
author = "skderand developers"
copyright = "2026, skderand developers"
release = skderand.__version__
version = ".".join(release.split(".")[:2])

# -- General -----------------------------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.intersphinx",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    "numpydoc",
    "sphinx_gallery.gen_gallery",
]

templates_path = ["_templates"]
exclude_patterns = [
    "_build",
    "Thumbs.db",
    ".DS_Store",
    "auto_examples/*.ipynb",
    "auto_examples/*.py",
    "auto_examples/*.zip",
    "auto_examples/*.md5",
    "auto_examples/*.codeobj.json",
    "benchmark_results/*",
]
root_doc = "index"
default_role = "literal"
pygments_style = "sphinx"
# Method names alone in the page tables of contents (not Class.method).
toc_object_entries_show_parents = "hide"

# autodoc / autosummary / numpydoc
autosummary_generate = True
autodoc_default_options = {"members": True, "inherited-members": True}
autodoc_typehints = "none"
numpydoc_show_class_members = False
numpydoc_class_members_toctree = False
numpydoc_attributes_as_param_list = True
numpydoc_xref_param_type = False

# -- Intersphinx -------------------------------------------------------------------

_INVENTORIES = {
    "python": ("https://docs.python.org/3/", None),
    "numpy": ("https://numpy.org/doc/stable/", None),
    "scipy": ("https://docs.scipy.org/doc/scipy/", None),
    "sklearn": ("https://scikit-learn.org/stable/", None),
    "joblib": ("https://joblib.readthedocs.io/en/stable/", None),
    "matplotlib": ("https://matplotlib.org/stable/", None),
}


def _online(host="scikit-learn.org", port=443, timeout=3.0):
    try:
        with socket.create_connection((host, port), timeout=timeout):
            return True
    except OSError:
        return False


_flag = os.environ.get("SKDERAND_DOC_INTERSPHINX", "").strip().lower()
if _flag in {"0", "false", "no", "off"}:
    _use_intersphinx = False
elif _flag in {"1", "true", "yes", "on"}:
    _use_intersphinx = True
else:
    _use_intersphinx = _online()
intersphinx_mapping = _INVENTORIES if _use_intersphinx else {}
intersphinx_timeout = 10
if not _use_intersphinx:
    print(
        "[skderand doc] intersphinx disabled (offline, or SKDERAND_DOC_INTERSPHINX=0):"
        " links to scikit-learn, numpy and scipy are rendered as plain text."
    )

# -- HTML --------------------------------------------------------------------------

html_theme = "pydata_sphinx_theme"
html_title = f"skderand {release}"
html_static_path = ["_static"]
html_css_files = ["skderand.css"]
html_theme_options = {
    "navbar_align": "left",
    "header_links_before_dropdown": 6,
    "show_toc_level": 2,
    "navigation_with_keys": False,
    "secondary_sidebar_items": ["page-toc", "sourcelink"],
}
html_sidebars = {"index": [], "comparison": []}
html_show_sourcelink = True
html_context = {"default_mode": "light"}

# -- Gallery -----------------------------------------------------------------------

sphinx_gallery_conf = {
    "examples_dirs": str(ROOT / "examples"),
    "gallery_dirs": "auto_examples",
    # Run every plot_*.py; a failing example fails the build.
    "filename_pattern": r"/plot_",
    "ignore_pattern": r"__init__\.py",
    "within_subsection_order": "gallery_order.ExampleOrder",
    "doc_module": ("skderand",),
    "backreferences_dir": "generated/backreferences",
    "image_scrapers": ("matplotlib",),
    "matplotlib_animations": False,
    "remove_config_comments": True,
    "show_memory": False,
    "min_reported_time": 0,
    "plot_gallery": "True",
    "abort_on_example_error": False,
    "only_warn_on_example_error": False,
    "download_all_examples": False,
}

# -- API reference, generated from __all__ -----------------------------------------

# Sections of the API page: (title, module, one-line description). Names are shown
# under their shortest public path (``skderand.X`` when re-exported at top level).
API_SECTIONS = [
    (
        "Structure discovery",
        "skderand.neural",
        "Networks trained to certified second-order stationary points whose first "
        "layer reveals the subspace the target depends on.",
    ),
    (
        "Learned Johnson-Lindenstrauss embeddings",
        "skderand.embedding",
        "Deterministic, data-adapted replacements for random projections.",
    ),
    (
        "Maximum cut",
        "skderand.maxcut",
        "Derandomized Goemans-Williamson rounding with a certified upper bound, and "
        "graph input/output.",
    ),
    (
        "QUBO and Ising",
        "skderand.qubo",
        "Quadratic binary problems by derandomized rounding with a certified bound, "
        "and QUBO / MAX-2-SAT file input.",
    ),
    (
        "The derandomization framework",
        "skderand.derandomize",
        "Derandomize your own Gaussian rounding: the continuation, the expectation "
        "protocol, and built-in closed-form expectations.",
    ),
    (
        "The SOSP solver",
        "skderand.optimize",
        "Certified approximate second-order stationary points, shared by every "
        "estimator, and test problems with strict saddles.",
    ),
    (
        "Planted data sets",
        "skderand.datasets",
        "Data whose low-dimensional structure is known, and the distance that "
        "scores a recovered subspace against it.",
    ),
]


def _public_objects(module_name):
    """Public classes and functions of a module, as (shortest public name, object)."""
    try:
        module = importlib.import_module(module_name)
    except ImportError:
        return []
    top = set(getattr(skderand, "__all__", []))
    out = []
    for name in getattr(module, "__all__", []):
        obj = getattr(module, name)
        if not (inspect.isclass(obj) or inspect.isfunction(obj)):
            continue
        if name in top and getattr(skderand, name, None) is obj:
            out.append((f"skderand.{name}", obj))
        else:
            out.append((f"{module_name}.{name}", obj))
    return out


def _write_api_page():
    lines = [
        ".. This file is generated by doc/conf.py from the package's __all__ lists.",
        "   Do not edit it; edit API_SECTIONS in conf.py instead.",
        "",
        ".. _api:",
        "",
        "=============",
        "API reference",
        "=============",
        "",
        "Every public class and function of skderand. Estimators follow the "
        "scikit-learn API (``fit``, ``predict``/``transform``, ``get_params``) and "
        "can be used in :class:`~sklearn.pipeline.Pipeline` and "
        ":class:`~sklearn.model_selection.GridSearchCV`.",
        "",
    ]
    covered = set()
    for title, module_name, blurb in API_SECTIONS:
        objects = _public_objects(module_name)
        if not objects:
            continue
        lines += [title, "=" * len(title), "", blurb, ""]
        for kind, test in (
            ("Estimators and classes", inspect.isclass),
            ("Functions", inspect.isfunction),
        ):
            names = [name for name, obj in objects if test(obj)]
            if not names:
                continue
            template = "class.rst" if kind.startswith("Estimators") else "function.rst"
            lines += [
                f".. rubric:: {kind}",
                "",
                ".. autosummary::",
                "   :toctree: generated/",
                f"   :template: {template}",
                "",
            ]
            lines += [f"   {name}" for name in names]
            lines.append("")
        covered.update(id(obj) for _, obj in objects)
    missing = [
        name
        for name in getattr(skderand, "__all__", [])
        if (
            inspect.isclass(getattr(skderand, name))
            or inspect.isfunction(getattr(skderand, name))
        )
        and id(getattr(skderand, name)) not in covered
    ]
    if missing:
        raise RuntimeError(
            f"Public objects {missing} are in skderand.__all__ but in no section of "
            "API_SECTIONS in doc/conf.py: add their module there."
        )
    # Remove stubs of names that moved or disappeared (e.g. a class re-exported at
    # top level once it landed): an orphan stub would fail the -W build.
    documented = {line.strip() for line in lines if line.startswith("   skderand.")}
    for stub in (DOC_DIR / "generated").glob("skderand.*.rst"):
        if stub.stem not in documented:
            stub.unlink()
    text = "\n".join(lines)
    path = DOC_DIR / "api.rst"
    if not path.exists() or path.read_text() != text:
        path.write_text(text)


_write_api_page()


# -- A role for gallery examples that may not exist yet -----------------------------


def _example_role(name, rawtext, text, lineno, inliner, options=None, content=None):
    """``:example:`plot_name``` links to a gallery example, or names its file.

    Examples are written in parallel with the estimators; a page can point at one
    before it exists without breaking the ``-W`` build (the link appears once the
    script is in ``examples/``).
    """
    from docutils import nodes
    from sphinx import addnodes

    stem = text.strip().removesuffix(".py")
    if (ROOT / "examples" / f"{stem}.py").exists():
        node = addnodes.pending_xref(
            "",
            nodes.inline(text, text),
            refdomain="std",
            reftype="ref",
            reftarget=f"sphx_glr_auto_examples_{stem}.py",
            refexplicit=False,
            refwarn=True,
        )
        return [node], []
    return [nodes.literal(rawtext, f"examples/{stem}.py")], []


def _unresolved_upstream_reference(app, env, node, contnode):
    """Render references from scikit-learn's own docstrings as plain text.

    Methods inherited from scikit-learn (``score``, ``set_output``,
    ``get_metadata_routing``, ...) carry references to labels of scikit-learn's
    documentation. With intersphinx on they resolve there first (this handler runs
    after intersphinx); offline, or for labels missing from the inventory, they
    become plain text instead of failing the ``-W`` build. References written in
    skderand's own docstrings and pages are left alone and still warn.
    """
    source = node.source or ""
    if "docstring of sklearn." in source:
        return contnode
    return None


_TYPE_LINE = re.compile(r"^(\s*\*{0,2}[\w*]+\*{0,2} : )(.*)$")
_TRAILING_UNDERSCORE = re.compile(r"(?<=\w)_(?=[,)\]\s]|$)")


def _escape_type_underscores(app, what, name, obj, options, lines):
    """Escape trailing underscores in numpydoc type fields.

    ``feature_names_in_ : ndarray of shape (n_features_in_,)`` is the scikit-learn
    convention, but in reST ``n_features_in_`` is a hyperlink reference to a
    target that does not exist. Only the type part of ``name : type`` lines is
    touched; descriptions keep their markup. Runs before numpydoc.
    """
    for i, line in enumerate(lines):
        match = _TYPE_LINE.match(line)
        if match:
            head, type_ = match.groups()
            lines[i] = head + _TRAILING_UNDERSCORE.sub(r"\\_", type_)


def _example_figure_directive():
    from sphinx.util.docutils import SphinxDirective

    class ExampleFigure(SphinxDirective):
        """``.. example-figure:: plot_name [number]`` with a caption as content.

        Shows figure ``number`` (default 1) drawn by a gallery example, with a link
        to the example; renders nothing while the example does not exist or was
        not run (``make html-noplot``), so pages never fail on a missing image.
        """

        required_arguments = 1
        optional_arguments = 1
        has_content = True

        def run(self):
            stem = self.arguments[0].removesuffix(".py")
            number = int(self.arguments[1]) if len(self.arguments) > 1 else 1
            image = f"auto_examples/images/sphx_glr_{stem}_{number:03d}.png"
            if not (DOC_DIR / image).exists():
                return []
            caption = " ".join(line.strip() for line in self.content)
            text = (
                f".. figure:: /{image}\n"
                "   :width: 100%\n\n"
                f"   {caption} (:ref:`sphx_glr_auto_examples_{stem}.py`)\n"
            )
            return self.parse_text_to_nodes(text)

    return ExampleFigure


def setup(app):
    app.add_directive("example-figure", _example_figure_directive())
    app.connect("autodoc-process-docstring", _escape_type_underscores, priority=100)
    from docutils.parsers.rst import roles

    roles.register_local_role("example", _example_role)
    app.connect("missing-reference", _unresolved_upstream_reference, priority=900)
