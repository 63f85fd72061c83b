"""Order of the examples in the gallery: from the solver to the estimators to
scaling out. Examples not listed here follow, in file-name order."""

ORDER = [
    "plot_sosp_solver.py",
    "plot_structure_discovery.py",
    "plot_bias_ablation.py",
    "plot_learned_jl.py",
    "plot_maxcut.py",
    "plot_qubo.py",
    "plot_max2sat.py",
    "plot_custom_rounding.py",
    "plot_pipeline.py",
    "plot_dask_scaleout.py",
]


class ExampleOrder:
    """Sort key for sphinx-gallery's ``within_subsection_order``."""

    def __init__(self, src_dir):
        self.src_dir = src_dir

    def __call__(self, filename):
        if filename in ORDER:
            return (0, ORDER.index(filename), filename)
        return (1, 0, filename)

    def __repr__(self):
        return "<ExampleOrder>"
