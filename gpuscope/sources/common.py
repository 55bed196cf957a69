"""What every reader of gpuscope/sources/ shares: the user's wishes beside the path (`Want`),
the role model of a source, and the samples frame kept with what reading it cost."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING

from gpuscope.rolemodel import RoleModel, load_model, model_for
from gpuscope.sources.source import Source

if TYPE_CHECKING:
    import pandas as pd

    from gpuscope.parsers.log.parsed import ParsedLog


@dataclass(frozen=True)
class Want:
    """What the user asked beside the path: a forced log format (--format), the role model
    (--model, None: picked per log), the progress line's callback (bytes read, bytes in all)."""
    fmt: str | None = None
    user: RoleModel | None = None
    progress: Callable[[int, int], None] | None = None


def model_of(user: RoleModel | None, log: ParsedLog | None = None) -> RoleModel:
    """The role model of a source: the user's, else the one its log calls for (the CuZK model
    for CuZK logs, else roles guessed from the names), else the built-in one."""
    if log is not None:
        return model_for(log, user)
    return user if user is not None else load_model(None)


def kept(src: Source, df: pd.DataFrame | None, path: Path) -> pd.DataFrame | None:
    """The samples frame, or None when it holds no row; what reading it cost goes to
    `src.samples_read` either way (a file whose every row was unreadable says so)."""
    if df is not None:
        # (lazy: the samples readers load pandas, ~0.25 CPU-s a log's analysis never needs;
        # a frame given here means they are loaded already)
        from gpuscope.parsers.samples import damage_note, reading_account

        src.samples_read = {"file": str(path), **reading_account(df), "note": damage_note(df)}
    return df if df is not None and len(df) else None
