"""summary.json has a schema (issue 22): what record/run write fits it, and a summary.json read
back with fields of the wrong type keeps the rest and names them; one that is no summary is
a one-line InputError (exit 3), never an internal error."""

from __future__ import annotations

import json

import pytest

from gpuscope.errors import InputError
from gpuscope.rundir import RunDir
from gpuscope.schemas import SUMMARY_SCHEMA, misfits
from gpuscope.summary import check_summary, read_summary, summarize_run

from .conftest import REPO

RUN = REPO / "tests" / "data" / "h200_bounds" / "runs" / "hbm_bound"


@pytest.fixture
def run(tmp_path):
    rd = RunDir.create(tmp_path / "run")
    rd.write_meta(status="complete", exit_code=0)
    (rd.path / "timing.log").write_text((RUN / "timing.log").read_text())
    (rd.path / "samples.csv").write_text((RUN / "samples.csv").read_text())
    return rd.path


def test_what_a_run_writes_fits_the_schema_and_reads_back_whole(run):
    assert summarize_run(run).analysis is not None
    doc = json.loads((run / "summary.json").read_text())
    assert check_summary(doc) is None and misfits(doc, SUMMARY_SCHEMA) == []
    assert set(doc) <= set(SUMMARY_SCHEMA), set(doc) - set(SUMMARY_SCHEMA)  # every field has its type
    kept, bad = read_summary(run)
    assert kept == doc and bad == []


@pytest.mark.parametrize("field,value", [("version", "2"), ("version", True), ("source", []), ("findings", {}),
                                         ("log", 1.5), ("trace", []), ("first_cause", 7)])
def test_a_field_of_the_wrong_type_is_left_out_and_named(run, field, value):
    summarize_run(run)
    doc = json.loads((run / "summary.json").read_text())
    doc[field] = value
    (run / "summary.json").write_text(json.dumps(doc))
    if field in ("version", "source", "findings"):  # required: no summary without it
        with pytest.raises(InputError, match=f"not a gpuscope summary.json .*{field}"):
            read_summary(run)
        return
    kept, bad = read_summary(run)
    assert bad == [field] and field not in kept and kept["source"] == doc["source"]


@pytest.mark.parametrize("body,why", [("[1, 2]", "a JSON list"), ("{" * 5, "unreadable"), ("[" * 100000, "nested"),
                                      ('{"records": 3}', "no usable version"), ("\x00\x01", "unreadable")])
def test_a_summary_that_is_no_summary_is_one_line(run, body, why):
    (run / "summary.json").write_text(body)
    with pytest.raises(InputError) as e:
        read_summary(run)
    assert why in str(e.value) and "\n" not in str(e.value)


def test_no_summary_reads_as_none_and_a_directory_in_its_place_is_refused(run):
    assert read_summary(run) == ({}, [])
    (run / "summary.json").mkdir()
    with pytest.raises(InputError, match="not a regular file"):
        read_summary(run)


def test_a_document_that_misfits_is_not_written(run, monkeypatch):
    from gpuscope.analysis.result import Analysis

    real = Analysis.document
    monkeypatch.setattr(Analysis, "document", lambda self: {**real(self), "log": "many"})
    s = summarize_run(run)
    assert s.analysis is None and "wrong type: log" in s.error
    assert not (run / "summary.json").exists()
    assert json.loads((run / "meta.json").read_text())["summary"].startswith("not written: the analysis does not fit")
