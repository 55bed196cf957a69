"""The one way in: open what the user pointed at (log file, run directory, samples file) as a
`Source` the analysis consumes, with the format detected by content and the line rate
resolved once.

    src = open_source("runs/20261130-120000-pageable")     # or a log, a samples file
    gpuscope.analysis.analyze(src)
"""

from gpuscope.sources.open import open_source
from gpuscope.sources.runmeta import RunMeta
from gpuscope.sources.source import Source

__all__ = ["RunMeta", "Source", "open_source"]
