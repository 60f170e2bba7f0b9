"""Reports stage: a scatter of predicted similarity against gold, which people read faster than a table.
matplotlib is an optional extra (`specrun[plot]`); without it there is no picture and the report says nothing
is missing beyond it."""

from __future__ import annotations

import atexit
import hashlib
import io
import os
import shutil
import sys
import tempfile
import threading
from typing import Any

import numpy as np

from specrun.core import registry
from specrun.core.derived import DerivedCache
from specrun.core.recent import Recent
from specrun.evaluation import ProtocolRun
from specrun.plan import Plan


def keep_matplotlib_off_disk() -> None:
    """--no-cache writes nothing that outlives the run: matplotlib's font cache (else under $HOME) goes to a
    folder removed at exit, unless the user chose its place ($MPLCONFIGDIR) or matplotlib is loaded already."""
    if "matplotlib" in sys.modules or os.environ.get("MPLCONFIGDIR"):
        return
    scratch = tempfile.mkdtemp(prefix="specrun-matplotlib-")
    atexit.register(shutil.rmtree, scratch, True)
    os.environ["MPLCONFIGDIR"] = scratch


def scatter_png(prediction: np.ndarray, gold: np.ndarray, title: str) -> bytes | None:
    """PNG bytes, or None when matplotlib is not installed. Drawn on this thread's one figure, made once with all
    that never changes (axes, labels, grid, margins) and made again when matplotlib's settings (rcParams) change:
    a fresh figure's axes and ticks were half of each picture's time. Only the points, the limits and the title
    change; the bytes are a fresh figure's (`fresh_scatter_png`, checked in a test), which draws what the reused
    one would not draw alike: no points, a non-finite value or a masked array."""
    try:
        from matplotlib import rcParams
        from matplotlib.figure import Figure  # noqa: F401 (a broken install: no picture, as without one)
    except ImportError:
        return None
    if not (len(gold) and _finite(gold) and _finite(prediction)):
        return fresh_scatter_png(prediction, gold, title)
    figure = getattr(_FIGURES, "scatter", None)
    if figure is None or not figure.made_with(rcParams):
        figure = _FIGURES.scatter = _ScatterFigure()
    return figure.png(prediction, gold, title)


def _finite(values: np.ndarray) -> bool:
    """Plain finite numbers (not a masked array): what the reused figure draws as a fresh one does."""
    if np.ma.isMaskedArray(values):
        return False
    try:
        return bool(np.isfinite(np.asarray(values, dtype=float)).all())
    except (TypeError, ValueError):
        return False


def fresh_scatter_png(prediction: np.ndarray, gold: np.ndarray, title: str) -> bytes | None:
    """The scatter drawn on a figure of its own."""
    try:
        from matplotlib.figure import Figure
    except ImportError:
        return None
    figure = Figure(figsize=(5, 4), dpi=100)
    axes = figure.subplots()
    axes.scatter(gold, prediction, s=10, alpha=0.5, linewidths=0)
    _label(axes, figure, title)
    return _png(figure)


def _label(axes: Any, figure: Any, title: str) -> Any:
    axes.set_xlabel("gold")
    axes.set_ylabel("predicted similarity (cosine)")
    text = axes.set_title(title, fontsize=10)
    axes.grid(alpha=0.3)
    # fixed margins for this one layout: tight_layout measured every artist again, half of an uncached run's time
    figure.subplots_adjust(left=0.14, right=0.97, bottom=0.12, top=0.91)
    return text


def _png(figure: Any) -> bytes:
    buffer = io.BytesIO()
    figure.savefig(buffer, format="png", metadata={"Software": None})  # no version string: same data, same bytes
    return buffer.getvalue()


RECENT_PICTURES = 32  # a thread's figure keeps its last pictures (tens of KB each)


def clear_recent_pictures() -> None:
    """Forget the pictures this thread's figure kept: the next of each is drawn again."""
    figure = getattr(_FIGURES, "scatter", None)
    if figure is not None:
        figure.recent.clear()


class _ScatterFigure:
    """One thread's scatter figure, reused: its points, data limits and title are set for each picture. It keeps
    its last pictures by their title and points, so the same picture again (a run repeated in one process, a
    suite's member run alone first) is not drawn again (50 ms); a change of settings makes a new figure, which
    keeps none."""

    def __init__(self) -> None:
        from matplotlib import rcParams
        from matplotlib.figure import Figure

        self.recent: Recent[bytes] = Recent()
        self.settings = dict(dict.items(rcParams))  # made with these (read as a dict: no backend resolved)
        self.figure = Figure(figsize=(5, 4), dpi=100)
        self.axes = self.figure.subplots()
        self.points = self.axes.scatter([0.0], [0.0], s=10, alpha=0.5, linewidths=0)
        self.title = _label(self.axes, self.figure, "")

    def made_with(self, settings: Any) -> bool:
        """Whether matplotlib's settings are still those it was made with: compared as dicts (RcParams' own
        reading resolves the backend, importing pyplot); a value that cannot be compared (a colour cycle of
        numpy arrays) counts as changed."""
        try:
            return bool(dict.__eq__(self.settings, settings))
        except (TypeError, ValueError):
            return False

    def png(self, prediction: np.ndarray, gold: np.ndarray, title: str) -> bytes:
        offsets = np.column_stack([np.asarray(gold, dtype=float), np.asarray(prediction, dtype=float)])
        named = title.encode("utf-8", "surrogatepass")
        key = hashlib.sha256(len(named).to_bytes(8, "little") + named + offsets.tobytes()).digest()
        if (kept := self.recent.get(key)) is not None:
            return kept
        self.points.set_offsets(offsets)
        self.axes.ignore_existing_data_limits = True  # the limits as a fresh axes' first scatter sets them
        self.axes.update_datalim(offsets)
        self.axes.set_autoscale_on(True)
        self.axes.autoscale_view()
        self.title.set_text(title)
        png = _png(self.figure)
        self.recent.put(key, png, count=RECENT_PICTURES)
        return png


_FIGURES = threading.local()


def plot_files(plan: Plan, runs: list[ProtocolRun], derived: DerivedCache | None,
               model_name: str) -> tuple[dict[str, bytes], dict[str, str]]:
    """The scatter of each (split, protocol) whose kind names outputs to plot (the registry's `plot`), through the
    derived cache: file name -> PNG, and split/protocol -> file name for results.json."""
    files: dict[str, bytes] = {}
    plots: dict[str, str] = {}
    for run in runs:
        pair = registry.PROTOCOLS[run.kind].info.plot
        if pair is None:
            continue
        prediction, gold = (run.outputs.arrays[name] for name in pair)
        png = cached_scatter(derived, prediction, gold, f"{plan.id} {run.split}, {run.protocol}: {model_name}")
        if png is not None:
            name = f"scatter-{run.split}-{run.protocol}.png"
            files[name] = png
            plots[f"{run.split}/{run.protocol}"] = name
    return files, plots


def cached_scatter(derived: DerivedCache | None, prediction: np.ndarray, gold: np.ndarray, title: str) -> bytes | None:
    """scatter_png, through the derived cache; None when matplotlib is not installed."""
    if derived is None:
        keep_matplotlib_off_disk()
    if derived is None or not derived.versions.get("matplotlib"):
        return scatter_png(prediction, gold, title)
    key = derived.key("scatter", title, arrays=[prediction, gold])
    stored = derived.get(key, "plot")
    if stored is not None:
        if stored.startswith(b"\x89PNG\r\n\x1a\n"):
            return stored
        derived.discard(key, "plot", "not a PNG")
    png = scatter_png(prediction, gold, title)
    if png is not None:
        derived.put(key, png)
    return png
