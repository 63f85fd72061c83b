"""Golden outputs of LearnedJLTransformer: one small fit per regime, unchanged.

The records in ``tests/data/learned_jl_golden.npz`` were made by
``tests/data/make_learned_jl_golden.py`` (which also defines the cases and says
when to re-record). A change to ``skderand/embedding/`` that is not meant to
change what a fit returns must pass this test as it is: the fits are
deterministic for a fixed ``random_state`` on one BLAS thread, so the maps are
compared directly, to within round-off, and the iteration count and the
certificate's verdict exactly.
"""

import importlib.util
from pathlib import Path

import numpy as np
import pytest
from threadpoolctl import threadpool_limits

_SCRIPT = Path(__file__).parent / "data" / "make_learned_jl_golden.py"
_spec = importlib.util.spec_from_file_location("_learned_jl_golden", _SCRIPT)
golden = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(golden)

# Round-off only: a change of path (another basin, another iteration count)
# moves these far more.
RTOL = 1e-10
ATOL = 1e-12


@pytest.fixture(scope="module")
def records():
    with np.load(golden.GOLDEN_PATH) as data:
        return {key: data[key] for key in data.files}


def test_every_case_is_recorded(records):
    recorded = {key.split("/")[0] for key in records if "/" in key}
    assert recorded == set(golden.CASES)


@pytest.mark.parametrize("name", list(golden.CASES))
def test_fit_matches_its_golden_record(records, name):
    # One BLAS thread, as the records were made: the paths follow its round-off.
    with threadpool_limits(limits=1, user_api="blas"):
        fitted = golden.fit_case(name)
    where = (
        f"case {name!r}; recorded on {records['environment']}, "
        f"run on {golden.environment()}"
    )
    expected = records[f"{name}/components_"]
    assert fitted["components_"].shape == expected.shape, where
    np.testing.assert_allclose(
        fitted["components_"], expected, rtol=RTOL, atol=ATOL, err_msg=where
    )
    np.testing.assert_allclose(
        fitted["distortion_"],
        records[f"{name}/distortion_"],
        rtol=RTOL,
        atol=0,
        err_msg=where,
    )
    assert fitted["n_components_"] == int(records[f"{name}/n_components_"]), where
    assert fitted["n_iter_"] == int(records[f"{name}/n_iter_"]), where
    assert fitted["certified_"] == bool(records[f"{name}/certified_"]), where
