"""A local copy of a hub dataset repo, as the MTEB import tests build them: what `datasets` reads offline from
`<data-dir>/<source>/` (README.md whose `configs:` front matter names each split's parquet file)."""

from __future__ import annotations

from pathlib import Path
from typing import Any


def hub_snapshot(folder: Path, splits: dict[str, Any]) -> Path:
    """Each split's table (a pyarrow Table, or its columns as {name: values}) written as data/<split>.parquet,
    and the README naming them in the default config; the folder returned."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    (folder / "data").mkdir(parents=True)
    for split, table in splits.items():
        pq.write_table(table if isinstance(table, pa.Table) else pa.table(table), folder / "data" / f"{split}.parquet")
    (folder / "README.md").write_text("---\nconfigs:\n- config_name: default\n  data_files:\n" + "".join(
        f"  - split: {split}\n    path: data/{split}.parquet\n" for split in splits) + "---\n", encoding="utf-8")
    return folder
