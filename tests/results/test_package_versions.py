"""The package versions a run records (results.json's `packages`) are importlib.metadata's own strings, though read
from the metadata file's header block alone (the whole-file parse was most of a small run's bookkeeping)."""

from __future__ import annotations

from importlib import metadata

from specrun.results import package_versions
from specrun.results.model import RECORDED_PACKAGES


def test_each_recorded_version_is_importlib_metadata_s() -> None:
    recorded = package_versions()
    installed = {}
    for name in RECORDED_PACKAGES:
        try:
            installed[name] = metadata.version(name)
        except metadata.PackageNotFoundError:
            continue
    assert recorded == installed
    assert {"specrun", "numpy", "pydantic"} <= set(recorded)
    assert package_versions() == recorded  # read again: the imported ones from memory


def test_every_installed_distribution_s_version_reads_the_same() -> None:
    """Not only the recorded ones: every distribution of this environment, long descriptions and odd headers
    included (over a hundred here)."""
    from specrun.results import _build

    names = sorted({dist.metadata["Name"] for dist in metadata.distributions() if dist.metadata["Name"]})
    assert len(names) > 50
    for name in names:
        assert _build._installed_version(name) == metadata.version(name), name
