"""`specrun export --format mteb` read back by mteb's own loader, in a side environment (mteb is never a dependency
of specrun, and this script imports nothing of specrun):

    specrun export --format mteb results/*/*/results.json -o /tmp/mteb-export
    /work/mteb-venv/bin/python bench/mteb_export_roundtrip.py /tmp/mteb-export

For every `<org>__<model>/<revision>/<TaskName>.json` below the folder: `mteb.TaskResult.from_disk` loads it, every
score the `specrun` block lists is read back through the loaded object (`scores[split]`, the entry of its
hf_subset) and must equal ours exactly, `main_score` too, and the `specrun` block must not be a field of the loaded
result (MTEB ignores the key). Then `validate_and_filter_scores` checks the splits and subsets against MTEB's own
task metadata. Each `<org>__<model>/<revision>/model_meta.json` must be one mteb's `ModelMeta` accepts (its
`to_dict` keys, `loader` and `is_cross_encoder` being what to_dict adds), and mteb's `ResultCache` over a copy of
the folder as its `results/` must list every task file with `require_model_meta=True` (the files it loads only
where a model_meta.json sits beside them). Prints one line per check and exits 1 on any difference."""

from __future__ import annotations

import json
import sys
from pathlib import Path


def main(folder: Path) -> int:
    import mteb
    from mteb import TaskResult

    files = sorted(p for p in folder.glob("*/*/*.json") if p.name != "model_meta.json")
    if not files:
        print(f"no <org>__<model>/<revision>/<TaskName>.json below {folder}")
        return 1
    print(f"mteb {mteb.__version__}: {len(files)} file(s)")
    failures = 0
    for path in files:
        loaded = TaskResult.from_disk(path)
        ours = json.loads(path.read_text(encoding="utf-8"))["specrun"]
        if "specrun" in loaded.model_dump():
            print(f"FAIL {path}: the specrun block became a field of TaskResult")
            failures += 1
        for run in ours["runs"]:
            for score in run["scores"]:
                entry = next(e for e in loaded.scores[score["split"]] if e["hf_subset"] == score["hf_subset"])
                back = entry[score["score"]]
                ok = back == score["value"] and (not score["main"] or entry["main_score"] == score["value"])
                failures += not ok
                print(f"{'ok  ' if ok else 'FAIL'} {loaded.task_name} {score['split']} {score['hf_subset']} "
                      f"{score['score']}: mteb reads {back!r}, specrun wrote {score['value']!r} "
                      f"[{score['ci_low']:.4f}, {score['ci_high']:.4f}]" + (" (main_score)" if score["main"] else ""))
        try:
            loaded.validate_and_filter_scores(task=mteb.get_task(loaded.task_name))
            print(f"ok   {loaded.task_name}: validate_and_filter_scores accepts the splits and subsets; "
                  f"get_score() = {loaded.get_score()!r}")
        except Exception as exc:  # a report line, not a crash: the check is the point
            failures += 1
            print(f"FAIL {loaded.task_name}: validate_and_filter_scores: {exc}")
    failures += check_model_meta(folder, files)
    print("round trip: " + ("every score read back equal" if not failures else f"{failures} failure(s)"))
    return 1 if failures else 0


def check_model_meta(folder: Path, files: list[Path]) -> int:
    """Every model folder's model_meta.json validated as mteb's ModelMeta; ResultCache finds every file with it."""
    import shutil
    import tempfile

    from mteb.cache import ResultCache
    from mteb.models.model_meta import ModelMeta

    failures = 0
    for revision in sorted({p.parent for p in files}):
        path = revision / "model_meta.json"
        if not path.is_file():
            print(f"FAIL {revision}: no model_meta.json")
            failures += 1
            continue
        written = json.loads(path.read_text(encoding="utf-8"))
        fields = {k: v for k, v in written.items() if k not in ("loader", "is_cross_encoder")}
        try:
            meta = ModelMeta.model_validate({**fields, "loader": None})
        except Exception as exc:  # a report line, not a crash
            print(f"FAIL {path}: ModelMeta refuses it: {exc}")
            failures += 1
            continue
        back = meta.to_dict()
        differs = [k for k in written if (sorted(back[k] or []) != sorted(written[k] or []) if k == "training_datasets"
                                       else back.get(k) != written[k])]  # a set in ModelMeta: order is lost
        failures += bool(differs)
        print(f"{'FAIL' if differs else 'ok  '} {path.relative_to(folder)}: ModelMeta reads name={meta.name} "
              f"n_parameters={meta.n_parameters} embed_dim={meta.embed_dim} max_tokens={meta.max_tokens} "
              f"memory_usage_mb={meta.memory_usage_mb} license={meta.license} languages={meta.languages} "
              f"similarity_fn_name={meta.similarity_fn_name}" + (f"; differs in {differs}" if differs else ""))
    with tempfile.TemporaryDirectory() as tmp:
        shutil.copytree(folder, Path(tmp) / "results")
        found = ResultCache(tmp).get_cache_paths(require_model_meta=True, include_remote=False)
        ok = len(found) == len(files)
        failures += not ok
        print(f"{'ok  ' if ok else 'FAIL'} ResultCache.get_cache_paths(require_model_meta=True): {len(found)} of "
              f"{len(files)} file(s)")
    return failures


if __name__ == "__main__":
    if len(sys.argv) != 2:
        print(__doc__)
        raise SystemExit(2)
    raise SystemExit(main(Path(sys.argv[1])))
