"""The report's scatter is drawn on one reused figure per thread; its bytes are a fresh figure's for every kind of
data a run can plot (checked here against `fresh_scatter_png`, interleaved, so that nothing of one picture leaks
into the next), on every thread. The figure keeps its last pictures: the same one again is not drawn again."""

from __future__ import annotations

import sys
from concurrent.futures import ThreadPoolExecutor

import numpy as np
import pytest

from specrun.reports import plots
from specrun.reports.plots import RECENT_PICTURES, clear_recent_pictures, fresh_scatter_png, scatter_png

pytest.importorskip("matplotlib")
pytestmark = pytest.mark.xdist_group("scatter")  # one worker draws the fresh pictures the tests share, once

RNG = np.random.default_rng(7)
CASES = [
    ("sts", RNG.random(250), RNG.random(250) * 5),
    ("one point", np.array([0.5]), np.array([3.0])),
    ("constant prediction", np.ones(10), np.arange(10.0)),
    ("constant gold", RNG.random(10), np.full(10, 2.0)),
    ("integers", np.arange(5), np.arange(5)),
    ("wide and narrow ranges", RNG.random(50) * 1e6 - 5e5, RNG.random(50) * 1e-6),
    ("many points", RNG.random(1000) * 2 - 1, RNG.integers(0, 6, 1000).astype(float)),
    ("float32", RNG.random(3).astype(np.float32), RNG.random(3).astype(np.float32)),
    ("negative cosines", RNG.random(40) * 2 - 1, RNG.random(40)),
    ("empty", np.array([]), np.array([])),
    ("no finite point", np.full(4, np.nan), np.arange(4.0)),  # (a run refuses these: the public function draws)
    ("a masked point", np.ma.masked_array(RNG.random(6), mask=[0, 1, 0, 0, 0, 0]), RNG.random(6)),
    ("a long title, then a short one", RNG.random(30), RNG.random(30)),
]


@pytest.fixture(scope="module")
def fresh() -> list[bytes | None]:
    return [fresh_scatter_png(prediction, gold, title) for title, prediction, gold in CASES]


def test_the_reused_figure_draws_a_fresh_figure_s_bytes(fresh: list[bytes | None]) -> None:
    for order in (range(len(CASES)), reversed(range(len(CASES)))):
        for case in order:
            title, prediction, gold = CASES[case]
            clear_recent_pictures()  # each drawn, after the one before it
            png = scatter_png(prediction, gold, title)
            assert png is not None and png.startswith(b"\x89PNG\r\n\x1a\n")
            assert png == fresh[case], title


def test_each_thread_draws_the_same_bytes(fresh: list[bytes | None]) -> None:
    with ThreadPoolExecutor(3) as pool:
        assert list(pool.map(lambda case: scatter_png(case[1], case[2], case[0]), CASES)) == fresh


def test_changed_matplotlib_settings_are_drawn_as_a_fresh_figure_draws_them(fresh: list[bytes | None]) -> None:
    from matplotlib import rc_context

    title, prediction, gold = CASES[0]
    assert scatter_png(prediction, gold, title) == fresh[0]
    with rc_context({"font.size": 14, "axes.prop_cycle": "cycler(color=['red'])"}):
        changed = scatter_png(prediction, gold, title)
        assert changed == fresh_scatter_png(prediction, gold, title) and changed != fresh[0]
    assert scatter_png(prediction, gold, title) == fresh[0]


def test_the_same_picture_again_is_the_one_kept_and_anything_else_is_drawn(
        fresh: list[bytes | None], monkeypatch: pytest.MonkeyPatch) -> None:
    """Kept by title and points as drawn (float64): the same again is not drawn; another title, one point moved
    by an ulp or a point more is drawn (a fresh figure's bytes); the kept pictures are the last RECENT_PICTURES."""
    title, prediction, gold = CASES[0]
    moved = prediction.copy()
    moved[3] = np.nextafter(moved[3], 2.0)
    others = [(prediction, gold, title + " "), (moved, gold, title), (np.append(prediction, 0.5), np.append(gold, 1.0),
                                                                      title)]
    expected = [fresh_scatter_png(*other) for other in others]
    drawn: list[str] = []
    draw = plots._png
    monkeypatch.setattr(plots, "_png", lambda figure: drawn.append("png") or draw(figure))
    clear_recent_pictures()
    assert scatter_png(prediction, gold, title) == fresh[0] and len(drawn) == 1
    assert scatter_png(prediction.copy(), gold.copy(), title) == fresh[0] and len(drawn) == 1
    assert [scatter_png(*other) for other in others] == expected and len(drawn) == 4
    assert RECENT_PICTURES >= 8
    monkeypatch.setattr(plots, "RECENT_PICTURES", 4)  # the bound as the figure reads it, drawn 4 times here
    for i in range(4):  # the first falls out
        scatter_png(prediction[: i + 2], gold[: i + 2], "t")
    assert scatter_png(prediction, gold, title) == fresh[0] and len(drawn) == 9
    clear_recent_pictures()
    assert scatter_png(prediction, gold, title) == fresh[0] and len(drawn) == 10


def test_a_broken_matplotlib_is_no_picture(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "matplotlib.figure", None)  # an install whose figure module fails to import
    assert scatter_png(np.array([0.1, 0.2]), np.array([1.0, 2.0]), "t") is None


@pytest.mark.slow  # a fresh process
def test_settings_that_cannot_be_compared_redraw_and_pyplot_is_never_imported() -> None:
    """A colour cycle of numpy arrays makes RcParams' own comparison raise: the figure is made again instead. And
    reading the settings never resolves matplotlib's backend (which imports pyplot, maybe a GUI toolkit)."""
    import subprocess

    script = (
        "import sys, numpy as np\n"
        "from cycler import cycler\n"
        "from matplotlib import rc_context\n"
        "from specrun.reports.plots import fresh_scatter_png, scatter_png\n"
        "p, g = np.linspace(0, 1, 20), np.linspace(0, 5, 20)\n"
        "assert scatter_png(p, g, 't') == fresh_scatter_png(p, g, 't')\n"
        "assert 'matplotlib.pyplot' not in sys.modules\n"
        "with rc_context({'axes.prop_cycle': cycler(color=[np.array([i / 10, 0, 0]) for i in range(10)])}):\n"
        "    assert scatter_png(p, g, 't') == fresh_scatter_png(p, g, 't')\n"
        "print('ok')\n")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=120)
    assert done.stdout.strip() == "ok", done.stderr
