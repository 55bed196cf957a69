"""Hostile input, round four (issue 34), the readers and time: classes 1, 2, 3, 9, 16, 17, 18.
Each case writes its own input; each fails on the code before its fix."""

from __future__ import annotations

import pytest
from typer.testing import CliRunner

from gpuscope.cli import app
from gpuscope.errors import EXIT_RESOURCE, EXIT_USAGE, UsageError
from gpuscope.rolemodel import load_model

from .conftest import EXAMPLES

LOG = EXAMPLES / "article_excerpt.log"


def cli(*args, input=None):
    r = CliRunner().invoke(app, [str(a) for a in args], input=input)
    return r.exit_code, r.stdout, r.stderr


def one_line(stderr: str) -> str:
    lines = [ln for ln in stderr.splitlines() if ln.strip()]
    assert len(lines) == 1 and lines[0].startswith("gpuscope: "), stderr
    assert "internal error" not in lines[0] and "Traceback" not in stderr
    return lines[0]


# -- 18: a [contains] cycle in a role model ----------------------------------------------------

_ROLES = 'held = "x"\n[roles]\nh2d = ["a", "b", "c"]\n[contains]\n'


@pytest.mark.parametrize("contains", [
    'a = { inner = "b", remainder_role = "gpu_compute" }\nb = { inner = "a", remainder_role = "gpu_compute" }\n',
    'a = { inner = "b", remainder_role = "gpu_compute" }\nb = { inner = "c", remainder_role = "gpu_compute" }\n'
    'c = { inner = "a", remainder_role = "gpu_compute" }\n',
])
def test_a_contains_cycle_is_refused_with_one_line(tmp_path, contains):
    p = tmp_path / "m.toml"
    p.write_text(_ROLES + contains)
    with pytest.raises(UsageError, match="a cycle"):
        load_model(p)
    code, _, err = cli("analyze", LOG, "--model", p)
    assert code == EXIT_USAGE and "a cycle" in one_line(err)


def test_a_contains_chain_without_a_cycle_is_still_a_model(tmp_path):
    # what would make the cycle check fire falsely: a chain (a holds b, b holds c), or two
    # outers sharing one inner; neither comes back to where it began
    p = tmp_path / "m.toml"
    p.write_text(_ROLES + 'a = { inner = "b", remainder_role = "gpu_compute" }\n'
                 'b = { inner = "c", remainder_role = "gpu_compute" }\n')
    assert load_model(p).contains["b"].inner == "c"
    p.write_text(_ROLES + 'a = { inner = "c", remainder_role = "gpu_compute" }\n'
                 'b = { inner = "c", remainder_role = "gpu_compute" }\n')
    assert set(load_model(p).contains) == {"a", "b"}


# -- 9: out of memory, anywhere ------------------------------------------------------------------

def test_memory_error_anywhere_is_exit_6_with_one_line(monkeypatch):
    import gpuscope.rolemodel as rolemodel

    def starve(*a, **k):
        raise MemoryError()

    monkeypatch.setattr(rolemodel, "model_from_dict", starve)
    code, _, err = cli("analyze", LOG)
    assert code == EXIT_RESOURCE and "out of memory" in one_line(err)
