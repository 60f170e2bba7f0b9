"""Published results in: MTEB's result files (the results repository's layout `<org>__<model>/<revision>/
<TaskName>.json`, mteb 1.x and 2.x) read as reference rows beside ours (`files`: the bounded, validated read;
`_older`: the layout before mteb 1.11, converted as mteb does; `_index`: the folder's names, one revision per
model; `meta`: model_meta.json; `lookup`: a run's model and revision to its values, or every model's; `_check`:
ours against theirs; `comparable`: why a published value may not measure what our run measures). A published
value has no interval and no per-unit predictions: never resampled or paired; a leaderboard ranks it as a point
(`board._beside`)."""

from __future__ import annotations

from specrun.mteb.results._check import CheckRow, check_published, check_text
from specrun.mteb.results._index import PublishedIndex
from specrun.mteb.results.files import NO_REVISION, PublishedValue, TaskFile, read_task_file
from specrun.mteb.results.lookup import Found, Published, PublishedDir
from specrun.mteb.results.meta import PublishedModelMeta

__all__ = ["NO_REVISION", "CheckRow", "Found", "Published", "PublishedDir", "PublishedIndex", "PublishedModelMeta",
           "PublishedValue", "TaskFile", "check_published", "check_text", "read_task_file"]
