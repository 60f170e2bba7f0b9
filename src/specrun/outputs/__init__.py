"""Writing a run's output files: each spec's set lands as one unit (`_sets`), a tree of hub files all or nothing
(`_tree`), checked before any work (`_preflight`), and named (`folders`); `fs` holds the filesystem steps they take."""

from __future__ import annotations

from specrun.outputs._owned import SetKind
from specrun.outputs._preflight import preflight_output_folders, preflight_output_root
from specrun.outputs._sets import PAUSES, OutputSet, Pauses, write_output_sets
from specrun.outputs._tree import write_file_tree
from specrun.outputs.folders import RunFolders, output_folder
from specrun.outputs.fs import LOCK_SUFFIX, OLD_TAG, STAGING_TAG

__all__ = ["LOCK_SUFFIX", "OLD_TAG", "PAUSES", "STAGING_TAG", "OutputSet", "Pauses", "RunFolders", "SetKind",
           "output_folder", "preflight_output_folders", "preflight_output_root", "write_file_tree",
           "write_output_sets"]
