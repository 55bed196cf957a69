"""The analysis a run directory ends with: `gpuscope run` and `gpuscope record` open the run
directory they just wrote through the one source facade, analyze it and keep the result as
summary.json. A run whose output cannot be analyzed is still a good run: the reason is
returned, never raised."""

from __future__ import annotations

import os
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.errors import GpuscopeError

if TYPE_CHECKING:
    from collections.abc import Callable

    from gpuscope.analysis import Analysis


@dataclass
class Summary:
    analysis: Analysis | None
    error: str | None = None        # why there is no analysis (one line)
    no_data: bool = False           # the run printed nothing to analyze (not a failure)


def summarize_run(path: str | os.PathLike[str], *, abc_bytes: int | None = None,
                  on_error: Callable[[str], None] | None = None) -> Summary:
    """Analyze the run directory at `path` and write its summary.json. `abc_bytes`: the bytes
    one record uploads, when the caller knows them (a workload run does)."""
    from gpuscope.analysis import AnalyzeOptions, analyze
    from gpuscope.errors import NoDataError
    from gpuscope.rundir import SUMMARY, RunDir
    from gpuscope.sources import open_source

    try:
        result = analyze(open_source(path), AnalyzeOptions(abc_bytes=abc_bytes))
    except NoDataError as e:
        return Summary(None, e.one_line(), no_data=True)
    except GpuscopeError as e:
        return Summary(None, e.one_line())
    except Exception as e:  # an analysis bug must not fail the run that produced the data
        return Summary(None, f"analysis failed: {type(e).__name__}: {e}")
    RunDir(Path(path), on_error=on_error).write_json(SUMMARY, result.to_json())
    return Summary(result)
