"""Cluster agreement as scikit-learn defines it (V-measure, NMI and AMI with the arithmetic mean, ARI), count-weighted
and one value per run: cluster_id is (documents, runs), gold_class (documents,) or, for label paths scored level by
level, (documents, runs): the gold label at each run's level. scikit-learn's scorers take no sample weights; here a
resample's weighted contingency table (one sparse product for a batch of resamples) gives the same numbers as
scikit-learn on the repeated documents. A run that drew documents with replacement (the clustering kind's mteb2
procedure) counts a document once per draw: its cluster_id is the cluster plus DRAW_STRIDE per draw beyond the first
(a legacy run's ids, below DRAW_STRIDE, count once)."""

from __future__ import annotations

import numpy as np

from specrun.core.contracts import MetricEntry
from specrun.core.registry import METRICS

INPUTS = ("cluster_id", "gold_class")
DRAW_STRIDE = 2**20  # as protocols.clustering packs its draws (the metrics import no protocol)


def draws(clusters: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
    """(cluster, times drawn) of each packed cluster_id: -1 (left out) is drawn no times."""
    member = clusters >= 0
    return np.where(member, clusters % DRAW_STRIDE, 0), np.where(member, clusters // DRAW_STRIDE + 1, 0)


class Agreement:
    """What every measure reads of the weighted contingency table of each run (gold label x cluster, a document
    once per draw; a document a run left out, cluster -1, counts nowhere in it), each (..., runs): the total, the
    row (class) and column (cluster) sums, their entropies, the mutual information and the pair sums ARI needs.

    Only the cells the sample fills are counted: a resample draws from the sample's documents, so it fills no
    other cell. One sparse product per run gives a batch of resamples' cells, (resamples, filled cells), where
    a dense table of every class x cluster would hold (resamples, classes x clusters) and spend its time on zeros
    (77 classes: 5,929 cells against at most one per document)."""

    total: np.ndarray
    h_gold: np.ndarray
    h_cluster: np.ndarray
    mi: np.ndarray
    sum_squares: np.ndarray  # the sum of each cell's count squared
    by_column: np.ndarray  # the sum of each cell's count times its column's
    by_row: np.ndarray  # and times its row's
    rows: list[np.ndarray]  # per run (each run fills its own classes and clusters): (resamples, classes)
    columns: list[np.ndarray]  # (resamples, clusters)

    def __init__(self, clusters: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> None:
        from scipy import sparse  # imported here: scipy.sparse costs a second at start-up

        ids, times = draws(clusters.reshape(len(gold), -1).astype(np.int64))
        golds = np.maximum(gold.astype(np.int64).reshape(len(gold), -1), 0)  # one column, or one per run
        flat = np.atleast_2d(np.asarray(weights, dtype=np.float64))  # (resamples, documents)
        parts: dict[str, list[np.ndarray]] = {}
        for run in range(ids.shape[1]):
            # the run's own documents only (a set of the clustering kind's `sets` is a few of them)
            member = np.flatnonzero(times[:, run] > 0)
            counted = member if 0 < len(member) < len(gold) else slice(None)
            labels, run_ids = golds[counted, run % golds.shape[1]], ids[counted, run]
            stride = int(run_ids.max(initial=0)) + 1
            cells, cell_of = np.unique(labels * stride + run_ids, return_inverse=True)
            table = np.asarray((sparse.csr_matrix((times[counted, run].astype(np.float64),
                                                   (np.arange(len(labels)), cell_of.ravel())),
                                                  shape=(len(labels), len(cells))).T @ flat[:, counted].T).T)
            class_of = np.unique(cells // stride, return_inverse=True)[1].ravel()
            cluster_of = np.unique(cells % stride, return_inverse=True)[1].ravel()
            rows, columns = _sum_by(table, class_of), _sum_by(table, cluster_of)
            total = table.sum(axis=-1)
            row_of_cell, column_of_cell = rows[:, class_of], columns[:, cluster_of]
            with np.errstate(invalid="ignore", divide="ignore"):
                ratio = table * total[:, None] / np.where(table > 0, row_of_cell * column_of_cell, 1)
                mi = np.where(table > 0, table * np.log(np.where(table > 0, ratio, 1)), 0.0).sum(axis=-1) / total
            for name, value in (("total", total), ("rows", rows), ("columns", columns),
                                ("h_gold", _plogp(rows, total)), ("h_cluster", _plogp(columns, total)),
                                ("mi", np.clip(np.where(np.abs(mi) < np.finfo(np.float64).eps, 0.0, mi), 0.0, None)),
                                ("sum_squares", (table ** 2).sum(axis=-1)),
                                ("by_column", (table * column_of_cell).sum(axis=-1)),
                                ("by_row", (table * row_of_cell).sum(axis=-1))):
                parts.setdefault(name, []).append(value)
        shape = (*np.shape(weights)[:-1], ids.shape[1])
        for name, values in parts.items():
            if name in ("rows", "columns"):
                setattr(self, name, values)
            else:
                setattr(self, name, np.stack(values, axis=-1).reshape(shape))

    def margins(self, run: int) -> tuple[np.ndarray, np.ndarray]:
        """The row and column sums of one run, (..., classes) and (..., clusters) in the shape of the weights."""
        lead = self.total.shape[:-1]
        return self.rows[run].reshape(*lead, -1), self.columns[run].reshape(*lead, -1)

    def one_label(self) -> np.ndarray:
        """Where a run counts documents of at most one gold label (or none)."""
        ones = [(self.rows[run] > 0).sum(axis=-1) <= 1 for run in range(self.total.shape[-1])]
        return np.stack(ones, axis=-1).reshape(self.total.shape)

    def one_each(self) -> np.ndarray:
        """Where both labellings put every counted document in one group (scikit-learn's perfect-match case)."""
        runs = range(self.total.shape[-1])
        ones = [((self.rows[run] > 0).sum(axis=-1) == 1) & ((self.columns[run] > 0).sum(axis=-1) == 1)
                for run in runs]
        return np.stack(ones, axis=-1).reshape(self.total.shape)


def _sum_by(table: np.ndarray, group: np.ndarray) -> np.ndarray:
    """(resamples, groups): the cells' counts added up per group (their class, or their cluster)."""
    from scipy import sparse

    member = sparse.csr_matrix((np.ones(len(group)), (group, np.arange(len(group)))),
                               shape=(int(group.max()) + 1, len(group)))
    return np.asarray((member @ table.T).T)


def _plogp(counts: np.ndarray, total: np.ndarray) -> np.ndarray:
    """-sum p log p over the last axis, p = counts / total (natural log, as scikit-learn)."""
    with np.errstate(invalid="ignore", divide="ignore"):
        p = counts / total[..., None]
        return -np.where(counts > 0, p * np.log(np.where(counts > 0, p, 1)), 0.0).sum(axis=-1)


def _one_label_scores_one(value: np.ndarray, parts: Agreement) -> np.ndarray:
    """A run whose counted documents hold one gold label, or none, scores 1: MTEB's rule (its evaluators fit k =
    the labels, so one label is one cluster; the legacy `sets` leave a set of one label unclustered and score it
    1, an empty one too). The point value meets it only in such a set (the kind refuses one label elsewhere); a
    resample meets it where it draws one label of a small set, or none of its documents, and scores that set as
    MTEB would score those documents, not as a degenerate resample."""
    return np.where(parts.one_label(), 1.0, value)


def v_measure(clusters: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    parts = Agreement(clusters, gold, weights)
    mi, h_gold, h_cluster = parts.mi, parts.h_gold, parts.h_cluster
    with np.errstate(invalid="ignore", divide="ignore"):
        homogeneity = np.where(h_gold > 0, mi / h_gold, 1.0)
        completeness = np.where(h_cluster > 0, mi / h_cluster, 1.0)
        return _one_label_scores_one(np.where(homogeneity + completeness > 0,
                                              2 * homogeneity * completeness / (homogeneity + completeness), 0.0),
                                     parts)


def nmi(clusters: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    parts = Agreement(clusters, gold, weights)
    with np.errstate(invalid="ignore", divide="ignore"):
        value = np.where(parts.mi > 0, parts.mi / ((parts.h_gold + parts.h_cluster) / 2), 0.0)
    return _one_label_scores_one(np.where(parts.one_each(), 1.0, value), parts)


def expected_mutual_information(rows: np.ndarray, columns: np.ndarray, total: float) -> float:
    """E[MI] of two labelings with these marginals under the hypergeometric model (Vinh, Epps and Bailey 2010),
    the term AMI subtracts; integer counts (a bootstrap resample's are). Written out with log-gamma because
    scikit-learn's version is private."""
    from scipy.special import gammaln

    if total <= 0:
        return float("nan")
    a, b = rows[rows > 0][:, None, None], columns[columns > 0][None, :, None]
    n = int(total)
    top = int(min(a.max(), b.max()))
    nij = np.arange(1, top + 1, dtype=np.float64)[None, None, :]
    low, high = np.maximum(1, a + b - n), np.minimum(a, b)
    valid = (nij >= low) & (nij <= high)
    with np.errstate(invalid="ignore", divide="ignore"):
        log_p = (gammaln(a + 1) + gammaln(b + 1) + gammaln(n - a + 1) + gammaln(n - b + 1) - gammaln(n + 1)
                 - gammaln(nij + 1) - gammaln(a - nij + 1) - gammaln(b - nij + 1) - gammaln(n - a - b + nij + 1))
        term = nij / n * (np.log(n * nij) - np.log(a * b)) * np.exp(log_p)
    return float(np.where(valid, term, 0.0).sum())


def ami(clusters: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Adjusted mutual information, arithmetic mean (scikit-learn's default): (MI - E[MI]) / (mean H - E[MI])."""
    parts = Agreement(clusters, gold, weights)
    total = parts.total
    emi = np.empty_like(total)
    for run in range(total.shape[-1]):
        rows, columns = parts.margins(run)
        flat = zip(total[..., run].reshape(-1), rows.reshape(-1, rows.shape[-1]),
                   columns.reshape(-1, columns.shape[-1]), strict=True)
        emi[..., run] = np.array([expected_mutual_information(r, c, t) for t, r, c in flat]).reshape(
            total.shape[:-1])
    normalizer = (parts.h_gold + parts.h_cluster) / 2
    eps = np.finfo(np.float64).eps
    denominator = np.where(normalizer < emi, np.minimum(normalizer - emi, -eps), np.maximum(normalizer - emi, eps))
    # mean entropy = E[MI] forces MI = mean entropy (every document its own class and its own cluster): 0 / 0 in
    # exact arithmetic, float noise over float noise here (1.5 at 5 documents); scikit-learn's equal terms give 1
    exhausted = np.abs(normalizer - emi) <= 1e-10 * np.maximum(normalizer, 1.0)
    perfect = parts.one_each() | (exhausted & (np.abs(parts.mi - normalizer) <= 1e-10 * np.maximum(normalizer, 1.0)))
    return _one_label_scores_one(np.where(perfect, 1.0, (parts.mi - emi) / denominator), parts)


def ari(clusters: np.ndarray, gold: np.ndarray, weights: np.ndarray) -> np.ndarray:
    """Adjusted Rand index from the pair counts, as scikit-learn's pair_confusion_matrix formula."""
    parts = Agreement(clusters, gold, weights)
    total, sum_squares = parts.total, parts.sum_squares
    tp = sum_squares - total
    fp = parts.by_column - sum_squares
    fn = parts.by_row - sum_squares
    tn = total ** 2 - fp - fn - sum_squares
    with np.errstate(invalid="ignore", divide="ignore"):
        value = 2.0 * (tp * tn - fn * fp) / ((tp + fn) * (fn + tn) + (tp + fp) * (fp + tn))
    return _one_label_scores_one(np.where((fn == 0) & (fp == 0), 1.0, value), parts)


# Every clustering measure is biased by a resample's duplicates: a document drawn twice agrees with itself in both
# labellings, so a resample's V-measure, NMI, AMI and ARI sit above the sample's (the plug-in information measures
# by their small-sample bias as well). Their percentile interval lay above the value (77 classes on 3,000
# documents: it never held it in bench/coverage.py; six labels near chance: AMI and ARI above it too); centred
# covers the value the benchmark gives on average at its size and always holds the value.
for _name, _statistic in (("v_measure", v_measure), ("nmi", nmi), ("ami", ami), ("ari", ari)):
    METRICS.register(_name, MetricEntry(INPUTS, _statistic, hub_id=_name, per_run=True, run_gold=True,
                                        interval="centred"))


# A resample draws from the sample's documents, so it fills no class x cluster cell the sample left empty: with few
# documents per cell the resampled spread of the information measures falls short of the true one (0.85-0.92 of
# it at 0.5-10 per cell) and their interval covers less than it says. k-means makes as many clusters as classes, so
# a run's documents per cell is documents / classes^2. Measured by bench/coverage_clustering_cells.py
# (BENCHMARKS.md): the centred interval's coverage of the expected V-measure (NMI's is the same: with the
# arithmetic mean NMI is V-measure) at each number of documents per cell; ARI held (0.934-0.974).
FEW_PER_CELL = 20.0  # at 20, 30 and 100 per cell centred covered 0.954-0.964
CELL_COVERAGE = ((0.5, 0.906), (2.0, 0.917), (2.5, 0.922), (3.0, 0.923), (5.0, 0.913), (7.5, 0.936), (10.0, 0.915))
SHORT_AT_FEW = ("v_measure", "nmi", "ami")  # the mutual-information measures (AMI's own coverage not measured)


def per_cell(documents: int, classes: int) -> float:
    """Documents per class x cluster cell of a clustering with as many clusters as classes."""
    return documents / classes**2


def few_per_cell_note(name: str, metric: str, documents: int, classes: int) -> str | None:
    """The sentence a report says of a clustering score below FEW_PER_CELL documents per cell, or None."""
    cell = per_cell(documents, classes)
    if metric not in SHORT_AT_FEW or cell >= FEW_PER_CELL:
        return None
    nearest, coverage = min(CELL_COVERAGE, key=lambda pair: abs(pair[0] - cell))
    return (f"{name}: {documents:,} documents in {classes} classes and as many clusters are {cell:.1f} per class x "
            f"cluster cell, below {FEW_PER_CELL:g}: its resamples fill no cell the sample left empty, and there "
            f"a 95 % interval of V-measure covered {coverage:.3f} of the expected value "
            f"(measured at {nearest:g} per cell, bench/coverage_clustering_cells.py)")
