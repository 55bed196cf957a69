"""The role model: which component of a timing record plays which role.

A model is data (TOML): `held` names the whole (the GPU-lock tenure), `[roles]` maps each
role to the component names that play it, `[contains]` says that one component includes
another (ntt_kernels includes an explicit h2d upload when a log prints both). The built-in
CuZK model ships as gpuscope/models/cuzk.toml; `--model FILE.toml` loads a user's.
"""

from __future__ import annotations

import tomllib
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path

from gpuscope.errors import InputError, UsageError

#: Roles whose time lies inside the held time (they make up the split).
SPLIT_ROLES = ("h2d", "gpu_compute", "cpu_stall")
#: Every role a component may have.
ROLES = ("h2d", "gpu_compute", "cpu_stall", "contention", "cpu", "info")

BUILTIN = "cuzk"


@dataclass(frozen=True)
class Contains:
    inner: str
    remainder_role: str


@dataclass(frozen=True)
class RoleModel:
    name: str
    held: str
    roles: dict[str, str]  # component -> role
    contains: dict[str, Contains] = field(default_factory=dict)  # outer -> (inner, remainder role)
    source: str = "<built-in>"

    def role_of(self, component: str) -> str | None:
        """The component's role, or None when the model does not know it."""
        return self.roles.get(component)


def _bad(src: str, key: str, why: str) -> UsageError:
    return UsageError(f"model {src}: key '{key}': {why}")


def model_from_dict(data: dict, source: str = "<dict>") -> RoleModel:
    """Validate a parsed TOML document and build the model (UsageError names file and key)."""
    known = {"name", "held", "roles", "contains"}
    for key in data:
        if key not in known:
            raise _bad(source, key, f"unknown key (expected one of {', '.join(sorted(known))})")
    name = data.get("name", Path(source).stem)
    if not isinstance(name, str) or not name:
        raise _bad(source, "name", "must be a non-empty string")
    held = data.get("held")
    if not isinstance(held, str) or not held:
        raise _bad(source, "held", "must name the component that is the whole (e.g. \"mutex_held\")")
    roles_tbl = data.get("roles")
    if not isinstance(roles_tbl, dict) or not roles_tbl:
        raise _bad(source, "roles", "must be a table mapping roles to lists of component names")
    roles: dict[str, str] = {}
    for role, comps in roles_tbl.items():
        if role not in ROLES:
            raise _bad(source, f"roles.{role}", f"unknown role (expected one of {', '.join(ROLES)})")
        if not isinstance(comps, list) or not all(isinstance(c, str) and c for c in comps):
            raise _bad(source, f"roles.{role}", "must be a list of component names (strings)")
        for c in comps:
            if c == held:
                raise _bad(source, f"roles.{role}", f"'{c}' is the held component; it cannot have a role")
            if c in roles and roles[c] != role:
                raise _bad(source, f"roles.{role}", f"'{c}' already has role '{roles[c]}'")
            roles[c] = role
    contains: dict[str, Contains] = {}
    cont_tbl = data.get("contains", {})
    if not isinstance(cont_tbl, dict):
        raise _bad(source, "contains", "must be a table: outer = { inner = ..., remainder_role = ... }")
    for outer, spec in cont_tbl.items():
        key = f"contains.{outer}"
        if not isinstance(spec, dict):
            raise _bad(source, key, "must be an inline table { inner = ..., remainder_role = ... }")
        extra = set(spec) - {"inner", "remainder_role"}
        if extra:
            raise _bad(source, key, f"unknown field(s) {', '.join(sorted(extra))}")
        inner = spec.get("inner")
        rem = spec.get("remainder_role")
        if not isinstance(inner, str) or not inner:
            raise _bad(source, f"{key}.inner", "must name a component")
        if rem not in SPLIT_ROLES:
            raise _bad(source, f"{key}.remainder_role", f"must be one of {', '.join(SPLIT_ROLES)}")
        if roles.get(outer) not in SPLIT_ROLES:
            raise _bad(source, key, f"'{outer}' must have one of the roles {', '.join(SPLIT_ROLES)}")
        if roles.get(inner) not in SPLIT_ROLES:
            raise _bad(source, f"{key}.inner", f"'{inner}' must have one of the roles {', '.join(SPLIT_ROLES)}")
        if inner == outer:
            raise _bad(source, f"{key}.inner", "a component cannot contain itself")
        contains[outer] = Contains(inner=inner, remainder_role=rem)
    return RoleModel(name=name, held=held, roles=roles, contains=contains, source=source)


def load_model(path: str | Path | None = None) -> RoleModel:
    """Load a role model: None (or "cuzk") = the built-in one, else a TOML file."""
    if path is None or str(path) == BUILTIN:
        text = resources.files("gpuscope").joinpath("models", f"{BUILTIN}.toml").read_text("utf-8")
        return model_from_dict(tomllib.loads(text), source=f"<built-in {BUILTIN}>")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"model file not found: {p}")
    try:
        data = tomllib.loads(p.read_text("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"model {p}: not UTF-8 text") from None
    except OSError as e:
        raise InputError(f"model {p}: cannot read ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"model {p}: invalid TOML: {e}") from None
    return model_from_dict(data, source=str(p))
