"""Published results in: MTEB's result files (the results repository's layout `<org>__<model>/<revision>/
<TaskName>.json`, mteb 1.x and 2.x) read as reference rows beside ours (`files`: the bounded, validated read;
`lookup`: a run's model and revision to its values; `check`: ours against theirs). A published value has no
interval and no per-unit predictions: it is shown, never resampled, paired or ranked."""

from __future__ import annotations

from specrun.published.check import CheckRow, check_published, check_text
from specrun.published.files import NO_REVISION, PublishedValue, TaskFile, read_task_file
from specrun.published.lookup import Found, PublishedDir

__all__ = ["NO_REVISION", "CheckRow", "Found", "PublishedDir", "PublishedValue", "TaskFile", "check_published",
           "check_text", "read_task_file"]
