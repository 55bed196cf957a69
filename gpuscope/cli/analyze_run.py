"""What `gpuscope analyze` does once its options are read, without typer: the typer command
(gpuscope/cli/analyze.py) and the fast path of gpuscope/cli/fast.py both call `run`."""

from __future__ import annotations

import os
import sys
from typing import TYPE_CHECKING

from gpuscope.analysis import AnalyzeOptions, analyze
from gpuscope.analysis.document import bare_document
from gpuscope.cli._common import (
    emit,
    loading_for_good,
    say,
    say_samples_damage,
    say_warnings,
    source_title,
    stdout_console,
    write_file,
)
from gpuscope.cli.progress import Progress
from gpuscope.errors import NoDataError, UsageError
from gpuscope.rolemodel import vocabulary_of
from gpuscope.sources import open_source
from gpuscope.units import parse_size

# The reports below stay imported where they are used: each is what one output needs (rich for
# the console, matplotlib for --html's picture, the process pool for a folder of ranks), and a
# --json run loads none of them.

if TYPE_CHECKING:
    from gpuscope.analysis.document import RanksDoc


def warn_skipped(parsed, verbose: bool) -> None:
    n = parsed.count("skipped")
    if not n:
        return
    err = sys.stderr
    if verbose:  # the lines as the log has them, their control characters made visible
        from gpuscope.reports.safe_text import visible

        err.write(f"gpuscope: {n} damaged timing line(s) skipped:\n")
        sk = parsed.columns("skipped")
        for line, reason, text in zip(sk["line"].tolist(), sk["reason"].tolist(), sk["text"].tolist(), strict=True):
            err.write(visible(f"  line {int(line)}: {reason}: {text}") + "\n")
    else:
        err.write(f"gpuscope: {n} damaged timing line{'s' if n != 1 else ''} skipped (use -v to list)\n")


def run(source: str, *, as_json: bool = False, csv_dir: str | None = None, records: bool = False,
        fmt: str | None = None, model: str | None = None, line_rate: float | None = None,
        abc_bytes: str | None = None, samples: str | None = None, trace: str | None = None,
        verbose: bool = False, what_if: bool = False, html_file: str | None = None) -> None:
    nbytes = parse_size(abc_bytes, "--abc-bytes") if abc_bytes is not None else None
    ranks = _ranks(source, line_rate)  # a folder of per-rank traces or runs: each rank on its own
    # not one source: the ranks alone (run directories, or traces that are not one job's: never merged)
    if ranks is not None and (ranks["inputs"] == "runs" or not ranks.get("one_job", True)):
        _say_ranks(source, ranks, as_json, html_file or csv_dir)
        return
    with Progress(source) as progress:
        src = open_source(source, fmt=fmt, model=model, samples=samples, trace=trace, line_rate=line_rate,
                          progress=progress.reading)
        other = html_file or csv_dir or (samples and "--samples") or (trace and "--trace")
        if src.table is not None and other:  # a benchmark tool's table: shown as it is, no analysis of steps
            raise UsageError(f"{src.no_log_reason} ({other} is for timed steps or samples; --json gives the table)")
        say_warnings(src)  # before the analysis, which may end in an error they explain
        progress.step("analyzing")
        result = analyze(src, AnalyzeOptions(abc_bytes=nbytes, what_if=what_if))
    if result.table is not None:
        _say_bench_table(source, result, as_json)
        return
    if src.log is not None:
        warn_skipped(src.log, verbose)
    say_samples_damage(src)
    if ranks is not None and src.trace is not None:
        _with_folder(ranks, src.trace)
    if src.trace is not None and src.trace.skipped_events:
        say(f"{src.trace.skipped_events} damaged trace event(s) skipped")
    if html_file:
        from gpuscope.analysis.whatif.projection import whatif_doc

        wi = result.what_if if what_if else whatif_doc(src, abc_bytes=nbytes)
        write_file(html_file, html_page(result, src, whatif=wi), "the HTML report")
        say(f"wrote {html_file}")
    if csv_dir:
        from gpuscope.reports.csvout import write_csv

        written = write_csv(result, csv_dir)
        say(f"wrote {len(written)} CSV files to {csv_dir}")
    if as_json:
        emit({**result.document(), "ranks": ranks} if ranks is not None else result.document())
        return
    from gpuscope.reports.console import render_summary

    con = stdout_console()
    render_summary(result, con, records=records, verbose=verbose)
    if what_if and result.what_if is not None:
        from gpuscope.reports.compare_console import render_whatif_doc

        render_whatif_doc(result.what_if, con, vocabulary_of(result).to_json())
    if ranks is not None:
        from gpuscope.reports.ranks_console import render_ranks

        render_ranks(ranks, con)


def _say_bench_table(source: str, result, as_json: bool) -> None:
    """A benchmark table (Google Benchmark, nccl-tests, criterion): the table and what it is,
    in JSON the document's `table` part (docs/ANALYZE.md); no steps, no split, no diagnosis."""
    doc = result.document()
    if as_json:
        emit(doc)
        return
    from gpuscope.reports.bench_console import render_bench_table

    render_bench_table(doc["table"], "<stdin>" if source == "-" else source, stdout_console())


def html_page(result, src, *, whatif: dict | None = None) -> str:
    """The whole `analyze --html` page: the console's report and, when the source has anything
    on a time axis, the timeline picture, drawn from the trace analysis the report already made
    (a trace is analyzed once per command)."""
    with loading_for_good():
        from gpuscope.analysis.timeline_view import timeline_view
        from gpuscope.reports.html import analysis_html
        from gpuscope.reports.plot import view_png

    try:  # nothing on a time axis, or nothing drawable (samples of temperature alone): no picture
        tv = timeline_view(src, trace=result.trace, activity=result.samples)  # (each computed once)
        png: bytes | None = view_png(tv, title=source_title(src, result.log.records if result.log is not None else None))
    except NoDataError:
        png = None
    return analysis_html(result, png, whatif=whatif)


def _ranks(source: str, line_rate: float | None) -> RanksDoc | None:
    """The ranks document of a multi-rank folder (gpuscope.ranks_run), else None."""
    if source == "-" or not os.path.isdir(source):  # (no folder: ranks_run's process pool never imported)
        return None
    from gpuscope.ranks_run import analyze_ranks, rank_inputs

    paths = rank_inputs(source) if source != "-" else None
    return analyze_ranks(paths, line_rate=line_rate) if paths else None


def _with_folder(ranks: RanksDoc, trace) -> None:
    """What the ranks document says of the folder's own (merged) analysis: ranks naming one device
    get its union of activity, and a note that the folder's figures cover the ranks together."""
    from gpuscope.analysis.ranks import shared_devices

    ranks["shared_devices"] = shared_devices(trace)
    n = len(trace.ranks)
    if n > 1:  # the folder's own figures: never a sum over ranks without saying so
        ranks["notes"].append(f"the folder's own analysis above (activity, idle gaps, findings) covers the {n} "
                              "rank timelines together: its times are summed over the ranks and its shares are of "
                              f"the timelines' total ({n} x the wall span at most), not of the wall span; each "
                              "rank's own figures are in the ranks table")


def _say_ranks(folder: str, ranks: RanksDoc, as_json: bool, files: str | None) -> None:
    if files:
        what = "run directories" if ranks.get("one_job", True) else "separate runs (not ranks of one job)"
        raise UsageError(f"--html and --csv are for one source; a folder of {what} is analyzed run by run "
                         "(analyze each run for its report)")
    for e in ranks["errors"]:
        say(f"rank {e['rank']} ({e['name']}): not analyzed: {e['error']}")
    if as_json:
        emit(bare_document(folder, "ranks", ranks=ranks))
        return
    from gpuscope.reports.ranks_console import render_ranks

    render_ranks(ranks, stdout_console())
