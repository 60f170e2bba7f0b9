"""The spec's optional `metadata` (MTEB's task metadata keys), the task type derived from the kinds, and
`specrun list`'s filters over specs and suites."""

from __future__ import annotations

import re
import shutil
from pathlib import Path

import pytest

from specrun.core.errors import SpecError
from specrun.mteb.vocabulary import ANNOTATIONS_CREATORS, DOMAINS, SAMPLE_CREATION
from specrun.spec import load_spec, matches, task_types
from tests.conftest import ROOT, SPECS, assert_one_line_error, run_cli


def _with_metadata(tmp_path: Path, block: str) -> Path:
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    start = text.index("metadata:")
    end = text.index("\nlicence:")
    path = tmp_path / "biosses.yaml"
    path.write_text(text[:start] + block.rstrip("\n") + "\n" + text[end:], encoding="utf-8")
    return path


def test_shipped_specs_state_what_their_cards_say() -> None:
    biosses = load_spec(SPECS / "biosses.yaml").spec.metadata
    assert biosses is not None
    assert biosses.languages == ["eng-Latn"] and biosses.domains == ["Medical"]
    assert biosses.annotations_creators == "expert-annotated" and biosses.sample_creation == "found"
    assert biosses.date is None  # not stated anywhere: left out, not guessed
    jsts = load_spec(SPECS / "jsts.yaml").spec.metadata
    assert jsts is not None and jsts.languages == ["jpn-Jpan"] and jsts.language_codes == ["jpn"]
    assert load_spec(SPECS / "sickr.yaml").spec.metadata.sample_creation is None  # type: ignore[union-attr]


def test_a_spec_without_metadata_still_validates(tmp_path: Path) -> None:
    text = (SPECS / "biosses.yaml").read_text(encoding="utf-8")
    path = tmp_path / "biosses.yaml"
    path.write_text(text[:text.index("metadata:")] + text[text.index("licence:"):], encoding="utf-8")
    spec = load_spec(path).spec
    assert spec.metadata is None and spec.language == ["en"] and task_types(spec) == ["STS"]


def test_every_key_parses(tmp_path: Path) -> None:
    path = _with_metadata(tmp_path, """metadata:
  languages: [jpn-Jpan, eng-Latn]
  domains: [Medical, Academic]
  annotations_creators: LM-generated and reviewed
  sample_creation: machine-translated and verified
  date: [2012-01-01, 2014-12-31]
  reference: https://example.org/paper
""")
    meta = load_spec(path).spec.metadata
    assert meta is not None
    assert meta.date == ("2012-01-01", "2014-12-31")  # the text the author wrote, not a YAML timestamp
    assert meta.language_codes == ["jpn", "eng"] and meta.reference == "https://example.org/paper"


def test_vocabularies_are_mteb_s() -> None:
    assert {"Medical", "News", "Legal", "Academic", "Non-fiction"} <= set(DOMAINS)
    assert ANNOTATIONS_CREATORS[:3] == ("expert-annotated", "human-annotated", "derived")
    assert {"found", "created", "human-translated", "machine-translated"} <= set(SAMPLE_CREATION)


@pytest.mark.parametrize("block, key, expected", [
    ("  languages: [ja]", "metadata.languages[0]", "ISO 639-3 code and an ISO 15924 script"),
    ("  languages: [jpn-jpan]", "metadata.languages[0]", "ISO 639-3 code and an ISO 15924 script"),
    ("  languages: []", "metadata.languages", ""),
    ("  domains: [medical]", "metadata.domains[0]", "'Medical'"),
    ("  annotations_creators: experts", "metadata.annotations_creators", "'expert-annotated'"),
    ("  sample_creation: scraped", "metadata.sample_creation", "'found'"),
    ("  date: [2014-01-01, 2013-01-01]", "metadata.date", "from <= to"),
    ("  date: [2014-02-30, 2015-01-01]", "metadata.date", "not a calendar date"),
    ("  date: [2014-01-01]", "metadata.date", "two dates [from, to], got 1"),
    ("  reference: doi:10.1/x", "metadata.reference", ""),
    ("  language: [jpn-Jpan]", "metadata.language", "unknown key"),
])
def test_a_bad_value_is_one_line_at_its_key(tmp_path: Path, capsys: pytest.CaptureFixture[str], block: str,
                                             key: str, expected: str) -> None:
    path = _with_metadata(tmp_path, "metadata:\n" + block)
    with pytest.raises(SpecError) as info:
        load_spec(path)
    line = info.value.one_line()
    assert re.match(rf"^{re.escape(str(path))}:\d+: {re.escape(key)}: ", line), line
    assert expected in line
    code, _, err = run_cli(["validate", str(path)], capsys)
    assert_one_line_error(code, err, contains=key)


def test_task_type_comes_from_the_kind() -> None:
    from specrun.core.registry import PROTOCOLS

    for path in sorted(SPECS.glob("*.yaml")):
        spec = load_spec(path).spec
        assert task_types(spec) == list(dict.fromkeys(PROTOCOLS[p.kind].info.prompt_task
                                                     for p in spec.protocols.values()))
    assert task_types(load_spec(SPECS / "qabot.yaml").spec) == ["Retrieval"]


def test_filters_match_as_documented() -> None:
    jacsts = load_spec(SPECS / "jacsts.yaml").spec
    assert matches(jacsts, language="jpn", task_type="sts", domain="medical")
    assert matches(jacsts, language="jpn-Jpan") and matches(jacsts, language="ja")  # the `language` key too
    assert matches(jacsts, task_type="STS") and matches(jacsts, task_type="sts")
    assert not matches(jacsts, language="eng") and not matches(jacsts, domain="news")
    assert not matches(jacsts, task_type="retrieval")
    qabot = load_spec(SPECS / "qabot.yaml").spec
    assert matches(qabot, task_type="retrieval") and not matches(qabot, domain="medical")  # no domains: no match


def _listed(out: str) -> list[str]:
    cells = (row.split("│")[1].strip() for row in out.splitlines() if row.startswith("│"))
    return [cell for cell in cells if cell]  # a wrapped row goes on with an empty first cell


def test_list_filters_specs(capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["list", str(SPECS), "--language", "jpn", "--type", "sts", "--domain", "medical"],
                             capsys)
    assert code == 0, err
    assert _listed(out) == ["jacsts"]
    code, out, _ = run_cli(["list", str(SPECS), "--language", "jpn", "--type", "sts"], capsys)
    assert _listed(out) == ["jacsts", "jsick", "jsts"]
    code, out, _ = run_cli(["list", str(SPECS), "--domain", "Medical"], capsys)
    assert _listed(out) == ["biosses", "jacsts"]
    code, out, err = run_cli(["list", str(SPECS), "--language", "swa"], capsys)
    assert code == 0 and _listed(out) == []
    assert err.strip() == f"specrun: no spec or suite in {SPECS} matches --language swa"


def test_list_filters_suites_by_any_member(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    code, out, err = run_cli(["list", str(ROOT / "suites"), "--language", "jpn"], capsys)
    assert code == 0, err
    assert _listed(out) == ["japanese", "task-families"]  # task-families holds tatoeba (jpn-eng)
    code, out, _ = run_cli(["list", str(ROOT / "suites"), "--language", "eng", "--type", "sts"], capsys)
    assert "english-sts" in _listed(out) and "japanese" not in _listed(out)
    code, out, _ = run_cli(["list", str(ROOT / "suites"), "--domain", "medical"], capsys)
    assert _listed(out) == ["english-sts", "japanese"]  # biosses and jacsts are medical
    folder = tmp_path / "mixed"  # suites and specs in one folder: both tables filtered alike
    folder.mkdir()
    shutil.copy(SPECS / "jacsts.yaml", folder)
    shutil.copy(SPECS / "stsb.yaml", folder)
    code, out, _ = run_cli(["list", str(folder), "--domain", "medical"], capsys)
    assert _listed(out) == ["jacsts"]
