"""Apache Parquet (`parquet`), the format hub datasets are stored in, read with pyarrow one record batch at a
time. Each row is a dict of column -> value as Arrow gives it to Python (str, int, float, bool, None, lists,
dicts); conversion happens in the data stage, as for every reader."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path
from typing import Any

from specrun.core.contracts import ReaderEntry
from specrun.core.errors import DataError, first_line
from specrun.core.files import open_regular
from specrun.core.registry import register_reader
from specrun.readers.delimited import duplicates

MAGIC = b"PAR1"  # a parquet file begins and ends with these four bytes
BATCH_ROWS = 8192  # rows decoded at a time: the Arrow side holds one batch, never the whole table


def _check_magic(path: Path) -> None:
    """A file that is not parquet (a TSV renamed, an HTML error page saved as data, a cut download) is one line
    naming it, before pyarrow's own message about footers and thrift."""
    open_regular(path, path.name)
    with path.open("rb") as handle:
        head = handle.read(len(MAGIC))
        size = handle.seek(0, 2)
        handle.seek(max(size - len(MAGIC), 0))
        tail = handle.read(len(MAGIC))
    if head != MAGIC:
        raise DataError("not a parquet file (it does not begin with the bytes PAR1); is `format` right?",
                        file=str(path))
    if size < 3 * len(MAGIC) or tail != MAGIC:
        raise DataError("not a whole parquet file (it does not end with the bytes PAR1: cut short?)", file=str(path))


def read_parquet(path: Path, layout: Any, split: str) -> Iterator[dict[str, Any]]:
    """The file's rows in file order. The file is checked and its schema read now; the rows come as an iterator
    (the data stage reads any iterable of rows), decoded batch by batch, so the Arrow table is never held whole.
    Two columns of one name are refused: a row dict would keep one silently."""
    import pyarrow as pa
    import pyarrow.parquet as pq

    _check_magic(path)
    try:
        parquet = pq.ParquetFile(path)
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read as parquet: {first_line(exc)}", file=str(path)) from None
    twice = duplicates(list(parquet.schema_arrow.names))
    if twice:
        parquet.close()
        raise DataError(f"the file has two columns named {twice[0]!r}; a row can hold only one", file=str(path))
    return _rows(parquet, path)


def _rows(parquet: Any, path: Path) -> Iterator[dict[str, Any]]:
    import pyarrow as pa

    try:
        for batch in parquet.iter_batches(batch_size=BATCH_ROWS):
            yield from batch.to_pylist()
    except (pa.ArrowException, OSError) as exc:
        raise DataError(f"cannot read as parquet: {first_line(exc)}", file=str(path)) from None
    finally:
        parquet.close()


register_reader(ReaderEntry("parquet", read_parquet, extensions=(".parquet",),
                            description="Apache Parquet, rows as the file holds them"))
