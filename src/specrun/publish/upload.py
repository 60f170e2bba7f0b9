"""Publishing: every file of a run's or a benchmark's publication assembled and checked, the hub's reachability
checked in one quick call before any upload, and the upload itself; the token is never printed or written."""

from __future__ import annotations

import os
import re
from collections.abc import Mapping, Sequence

import yaml

from specrun.core.errors import PublishError, first_line
from specrun.core.types import Item
from specrun.publish._cards import (
    Source,
    benchmark_check,
    benchmark_eval_yaml,
    dataset_card,
    default_source,
    eval_results_yaml,
    model_index,
    publish_check,
)
from specrun.publish._dataset import data_layout, guess_language
from specrun.publish._schema import HubCheck, check_benchmark, check_revision, spec_task_ids
from specrun.publish.licence import Confirmation, card_gate, licence_gate, licence_refusal
from specrun.results import refuse_configured
from specrun.spec import Spec


def check_hub_reachable(repo_type: str, repo: str) -> None:
    """One short TCP connection to the hub before uploading, so that offline is one line within seconds instead
    of huggingface_hub's retries and log lines; its logging and progress bars are silenced for the upload."""
    from specrun.core.network import hub_offline_flag, hub_unreachable, quiet_hub_logging

    quiet_hub_logging()
    if hub_offline_flag():
        raise PublishError(f"HF_HUB_OFFLINE is set; nothing was uploaded to {repo_type} repo {repo}")
    reason = hub_unreachable()
    if reason is not None:
        raise PublishError(f"cannot reach the hub {reason}; nothing was uploaded to {repo_type} repo "
                           f"{repo}; rerun with --push when online, or without it for a dry run")


def redact(text: str) -> str:
    """A library's message with the token and any user:password of a URL, should it quote them, blanked."""

    for name in ("HF_TOKEN", "HUGGING_FACE_HUB_TOKEN"):
        token = os.environ.get(name)
        if token:
            text = text.replace(token, "***")
    return re.sub(r"://[^/@\s]+@", "://***@", text)


def upload(files: dict[str, str | bytes], repo: str, repo_type: str, message: str, create_pr: bool) -> str:
    """One commit (or pull request) with every file, through huggingface_hub; the URL it made. Errors are one
    line without the token."""
    from huggingface_hub import CommitOperationAdd, HfApi

    operations = [CommitOperationAdd(path_in_repo=name,
                                     path_or_fileobj=content if isinstance(content, bytes) else content.encode())
                  for name, content in files.items()]
    try:
        commit = HfApi().create_commit(repo_id=repo, repo_type=repo_type, operations=operations,
                                       commit_message=message, create_pr=create_pr)
    except Exception as exc:  # network, auth, permissions: one line, never the token
        raise PublishError(f"upload to {repo_type} repo {repo} failed: {redact(first_line(exc))}") from None
    return f"pull request {commit.pr_url}" if create_pr and commit.pr_url else commit.commit_url


HASHING_NOTE = ("a run of the hashing adapter (no model: a word-hashing embedder for tests and scale checks), "
                "whose numbers say nothing about {model}, though the files name it")


def results_publication(results_path: str, spec_path: str | None, benchmark: str, benchmark_revision: str | None,
                        source: Source | None, confirmation: Confirmation | None,
                        repo: str | None, *, push: bool = False) -> tuple[dict[str, str | bytes], HubCheck, str]:
    """`.eval_results/<spec>.yaml` and the model-index block of a verified run, with what the hub would make of
    them; the licence gate reads the spec (found by the sha256 results.json records), never the results file.
    An unconfirmed licence is refused here for a push, and named in the check (`licence`) for a dry run."""
    from specrun.results.verify import refuse_limited, verified_with_spec

    revision = check_revision(benchmark_revision)
    check_benchmark(benchmark)
    verified, loaded = verified_with_spec(results_path, spec_path)
    refuse_limited(verified, "publish")
    results, spec = verified.results, loaded.spec
    what = f"{results_path} ({spec.id})"
    card_gate(spec, f"spec {loaded.display}")
    hashing = HASHING_NOTE.format(model=results.provenance.model.name) \
        if results.provenance.model.adapter == "hashing" else None
    if push:
        licence_gate(spec.licence.publication, spec.licence.data, what, confirmation)
    if push and hashing:
        raise PublishError(f"{what}: {hashing}; a push is refused")
    if push:  # a model card's model-index names the model alone: a run of another configuration is not its score
        refuse_configured(results, results_path, "publish --push", "the model card's model-index")
    refusal = licence_refusal(spec.licence.publication, spec.licence.data, what, confirmation)
    spec_task_ids(spec)  # the same task ids (and collision check) as publish-benchmark's eval.yaml
    source = source or default_source(benchmark)
    files: dict[str, str | bytes] = {
        f".eval_results/{spec.id}.yaml": eval_results_yaml(results, benchmark, confirmation, revision=revision,
                                                           source=source),
        "model-index.yaml": yaml.safe_dump({"model-index": model_index(results, benchmark, spec=spec,
                                                                       revision=revision, source=source)},
                                           sort_keys=False, allow_unicode=True),
    }
    check = publish_check(results, spec, files, repo).add(HubCheck(licence=refusal))
    return files, check.add(HubCheck(warnings=[f"{hashing}: --push refuses it"] if hashing else [])), spec.id


def benchmark_publication(spec: Spec, splits: Mapping[str, Sequence[Item]] | None, examples: Sequence[Item],
                          confirmation: Confirmation | None, framework: str | None,
                          shown: str, *, push: bool = False) -> tuple[dict[str, str | bytes], HubCheck]:
    """The benchmark repo's files: the dataset card (README.md), eval.yaml and, when the sources allow
    (`data_withheld`), the evaluated splits' items as Parquet; with what the hub would make of them. An
    unconfirmed licence is refused here for a push, and named in the check (`licence`) for a dry run. The caller
    loads the items (the data stage runs before this stage, never from it)."""
    from specrun.reports import render_card

    what = f"{shown} ({spec.id})"
    card_gate(spec, f"spec {shown}")
    if push:
        licence_gate(spec.licence.publication, spec.licence.data, what, confirmation)
    eval_yaml = benchmark_eval_yaml(spec, framework)
    language = guess_language(spec, examples)
    data = data_layout(spec, splits) if splits else None
    files: dict[str, str | bytes] = {
        "README.md": dataset_card(spec, render_card(spec, examples, citation=False), confirmation, data=data,
                                  language=language),
        "eval.yaml": eval_yaml}
    if data:
        files.update(data.files)
    check = benchmark_check(spec, files)
    check.licence = licence_refusal(spec.licence.publication, spec.licence.data, what, confirmation)
    if language is None:
        check.warnings.append("the dataset card states no language: the spec has none and the texts did not show "
                              "one")
    return files, check
