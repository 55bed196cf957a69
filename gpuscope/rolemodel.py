"""The role model: which component of a timing record plays which role.

A model is data (TOML): `held` names the whole (the GPU-lock tenure), `[roles]` maps each
role to the component names that play it, `[contains]` says that one component includes
another (ntt_kernels includes an explicit h2d upload when a log prints both), and
`[vocabulary]` the words reports use for a record and its whole. The built-in CuZK model
ships as gpuscope/models/cuzk.toml; `--model FILE.toml` loads a user's.

Without --model, `model_for(parsed)` picks one: the CuZK model for CuZK and condensed logs (and kv
logs printing its names), else one guessed from the names (`guess_model`, `RoleModel.provenance()`).
"""

from __future__ import annotations

import re
import tomllib
from dataclasses import dataclass, field
from pathlib import Path

from gpuscope.errors import InputError, UsageError
from gpuscope.rolewords import (
    GENERIC_NAMES,
    GPU_WORDS,
    LOCK_WORDS,
    OUTSIDE_WORD,
    RECORD_NOUNS,
    TREE_WHY,
    guess_role,
    name_words,
    outside_role,
)

#: Roles whose time lies inside the held time (they make up the split).
SPLIT_ROLES = ("h2d", "gpu_compute", "cpu_stall", "d2h")
#: Every role a component may have.
ROLES = ("h2d", "gpu_compute", "cpu_stall", "d2h", "contention", "cpu", "info")

BUILTIN, GUESSED = "cuzk", "guessed"
LLM_PHASES = frozenset(("prefill", "decode", "decoding"))  # (guess_model: where a prefill is printed)


@dataclass(frozen=True)
class Vocabulary:
    """The words the reports use for a model's records. The CuZK model's records are GPU-lock tenures
    of a prover's partitions; any other program's are steps, iterations or records, and advice
    written for the prover (a/b/c vectors, prep_msm, the barrier) does not apply to it."""

    record: str = "record"        # one record: tenure | step | iteration | record
    records: str = "records"
    whole: str = "record time"    # what the held time is, in a sentence: GPU-lock time | step time
    held: str = "held"            # the whole's name as printed (mutex_held, step), for tables
    unit: str = "record"          # what the floors count: partition | step | record
    units: str = "records"
    lock: bool = False            # the whole is the time a GPU lock is held (contention words apply)
    cuzk: bool = False            # the CuZK prover's own advice applies

    def n(self, count: int) -> str:
        """`12 steps`, `1 tenure`."""
        return f"{count} {self.record if count == 1 else self.records}"

    def long(self, count: int) -> str:
        """`12 GPU-lock tenures` (a lock's records), `12 steps`."""
        return f"{count} {'GPU-lock ' if self.lock else ''}{self.record if count == 1 else self.records}"

    @property
    def Whole(self) -> str:  # noqa: N802 (the whole, capitalised for a title)
        return self.whole[:1].upper() + self.whole[1:]

    @property
    def Records(self) -> str:  # noqa: N802
        return self.records[:1].upper() + self.records[1:]

    def to_json(self) -> dict:
        return {k: getattr(self, k) for k in ("record", "records", "whole", "held", "unit", "units", "lock", "cuzk")}


#: the CuZK prover's words (gpuscope/models/cuzk.toml has them too)
CUZK_VOCABULARY = Vocabulary(record="tenure", records="tenures", whole="GPU-lock time", held="mutex_held",
                             unit="partition", units="partitions", lock=True, cuzk=True)


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
    vocabulary: Vocabulary = field(default_factory=Vocabulary)
    # how each role was decided (`guessed from name 'h2d'`), also for those with no role (`other`)
    how: dict[str, str] = field(default_factory=dict)
    held_how: str = ""            # how the whole was found (guessed models)

    def role_of(self, component: str) -> str | None:
        """The component's role, or None when the model does not know it."""
        return self.roles.get(component)

    def provenance(self, components=None) -> dict:
        """JSON-ready: {name, source, held: {name, how}, roles: {component: {role, how}},
        vocabulary}. `role` is null for a component the model gives no role (its time is
        `other`); the whole is listed with role "whole". `components` (names) limits
        `roles` to those, in that order (the components of the analyzed log)."""
        held_how = self.held_how or f"held key of {self.source}"
        if components is None:
            names = ([self.held] if self.held else []) + list(self.roles) + [c for c in self.how if c not in self.roles]
        else:
            names = [str(c) for c in components]
        roles: dict[str, dict] = {}
        for comp in names:
            if comp == self.held:
                roles[comp] = {"role": "whole", "how": held_how}
            elif comp in self.roles:
                roles[comp] = {"role": self.roles[comp], "how": self.how.get(comp, f"listed in {self.source}")}
            else:
                roles[comp] = {"role": None, "how": self.how.get(comp, f"not in {self.source}: no role (counted in other)")}
        return {"name": self.name, "source": self.source, "held": {"name": self.held or None, "how": held_how},
                "roles": roles, "vocabulary": self.vocabulary.to_json()}


def _bad(src: str, key: str, why: str) -> UsageError:
    return UsageError(f"model {src}: key '{key}': {why}")


def model_from_dict(data: dict, source: str = "<dict>") -> RoleModel:
    """Validate a parsed TOML document and build the model (UsageError names file and key)."""
    known = {"name", "held", "roles", "contains", "vocabulary"}
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
    _refuse_cycle(contains, source)
    vocab = _vocabulary(data.get("vocabulary", {}), held, source)
    return RoleModel(name=name, held=held, roles=roles, contains=contains, source=source, vocabulary=vocab)


def _refuse_cycle(contains: dict[str, Contains], source: str) -> None:
    """A `[contains]` chain back to its start (a in b in a) counts a time twice: refused, named."""
    for start in contains:
        chain, seen, c = [start], {start}, contains[start].inner
        while c in contains:
            chain.append(c)
            if c in seen:
                loop = chain[chain.index(c):]
                raise _bad(source, f"contains.{start}", f"a cycle: {' inside '.join(reversed(loop))} "
                           "(a component cannot contain what contains it)")
            seen.add(c)
            c = contains[c].inner


def _vocabulary(tbl, held: str, source: str) -> Vocabulary:
    """[vocabulary] record = "step", records = "steps", whole = "step time", unit, units, lock, cuzk."""
    if not isinstance(tbl, dict):
        raise _bad(source, "vocabulary", "must be a table (record = \"step\", whole = \"step time\", ...)")
    words = {"record", "records", "whole", "unit", "units"}
    for k, v in tbl.items():
        if k in words:
            if not isinstance(v, str) or not v.strip():
                raise _bad(source, f"vocabulary.{k}", "must be a non-empty string")
        elif k in ("lock", "cuzk"):
            if not isinstance(v, bool):
                raise _bad(source, f"vocabulary.{k}", "must be true or false")
        else:
            raise _bad(source, f"vocabulary.{k}", f"unknown key (expected one of {', '.join(sorted(words | {'lock', 'cuzk'}))})")
    record: str = tbl.get("record", "record")
    records: str = tbl.get("records", record + "s")
    unit: str = tbl.get("unit", record)
    return Vocabulary(record=record, records=records, whole=tbl.get("whole", f"{record} time"), held=held,
                      unit=unit, units=tbl.get("units", records if unit == record else unit + "s"),
                      lock=tbl.get("lock", False), cuzk=tbl.get("cuzk", False))


def load_model(path: str | Path | None = None) -> RoleModel:
    """Load a role model: None (or "cuzk") = the built-in one, else a TOML file."""
    if path is None or str(path) == BUILTIN:
        text = (Path(__file__).parent / "models" / f"{BUILTIN}.toml").read_text("utf-8")  # (a package data file: importlib.resources' import is ~6 ms of each start)
        return model_from_dict(tomllib.loads(text), source=f"<built-in {BUILTIN}>")
    p = Path(path)
    if not p.is_file():
        raise InputError(f"model file not found: {p}")
    try:
        if p.stat().st_size > MAX_MODEL_BYTES:
            raise UsageError(f"model {p}: larger than {MAX_MODEL_BYTES >> 10} KiB (a role model is a few lines)")
        data = tomllib.loads(p.read_bytes().decode("utf-8"))
    except UnicodeDecodeError:
        raise UsageError(f"model {p}: not UTF-8 text") from None
    except OSError as e:
        raise InputError(f"model {p}: cannot read ({e.strerror})") from None
    except tomllib.TOMLDecodeError as e:
        raise UsageError(f"model {p}: invalid TOML: {' '.join(str(e).split())}") from None
    except RecursionError:
        raise UsageError(f"model {p}: nested too deeply (a role model is tables of lists of names)") from None
    _check_values(data, str(p), "", 0)
    return model_from_dict(data, source=str(p))


MAX_MODEL_BYTES = 1 << 20
MAX_MODEL_DEPTH = 4  # a document, its tables ([roles], [contains]), their lists or inline tables
MAX_WORD = 200
# what no name or word of a model may hold: C0 controls (tab aside), DEL, C1 (ESC, CSI as
# U+009B), bidi overrides and isolates, line and paragraph separators
_CONTROL = re.compile("[\x00-\x08\x0a-\x1f\x7f-\x9f\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def _check_values(v, source: str, key: str, depth: int) -> None:
    """Before the model is read: no table or list deeper than MAX_MODEL_DEPTH, no string (key
    or value) longer than MAX_WORD or holding a control character (an escape sequence or a
    hyperlink in a vocabulary word would reach the terminal): UsageError naming the key."""
    if depth > MAX_MODEL_DEPTH:
        raise _bad(source, key or "(document)", f"nested more than {MAX_MODEL_DEPTH} deep")
    items = v.items() if isinstance(v, dict) else enumerate(v) if isinstance(v, list) else ()
    for k, x in items:
        sub = f"{key}.{k}" if key else str(k)
        for s in (k, x):
            if isinstance(s, str):
                if len(s) > MAX_WORD:
                    raise _bad(source, sub, f"longer than {MAX_WORD} characters")
                if _CONTROL.search(s):
                    raise _bad(source, sub, "holds a control character (an escape sequence?): not a name")
        if isinstance(x, (dict, list)):
            _check_values(x, source, sub, depth + 1)


def _names(parsed, frame: str, column: str) -> list[str]:
    """The distinct values of a text column of a log's frame, first seen first (the parser's codes)."""
    cols = getattr(parsed, "columns", None)
    if callable(cols):
        c = cols(frame)
        codes, cats = c.codes(column)  # (the names of the codes, each present, first seen first)
        return [str(x) for x in cats] if len(codes) else []
    df = getattr(parsed, frame, None)
    if df is None or not len(df):
        return []
    return [str(x) for x in dict.fromkeys(df[column].to_numpy(dtype=object).tolist())]


def guess_model(parsed, names: list[str] | None = None) -> RoleModel:
    """A role model for a log of any program: roles guessed from the component names (GUESS_RULES),
    the whole from the parser (ParsedLog.whole), words from its counters. `names`: the distinct names."""
    whole = getattr(parsed, "whole", None) or ""
    roles: dict[str, str] = {}
    how: dict[str, str] = {}
    not_parts = getattr(parsed, "not_parts", None) or {}
    lock = bool(whole) and any(w in LOCK_WORDS for w in name_words(whole))
    names = [str(n) for n in (names if names is not None else _names(parsed, "components", "component"))]
    # a CPU program's timer tree (plonky2/3, arkworks, Triton VM; no GPU word in any name): a name
    # alone (`compute_quotient_polys`) is no GPU work, no GPU floor (a GPU word anywhere: guessed)
    cpu_tree = any(TREE_WHY in w for w in not_parts.values()) and not any(GPU_WORDS & set(name_words(n)) for n in names)
    # an LLM's phases (a prefill printed: sglang's bench_latency, vLLM's): its decode is the GPU's token
    # generation, never an input decoded on the host (the word alone cannot tell: rules/guessed.py)
    llm = any("prefill" in name_words(n) for n in names)
    for name in names:
        if name == whole:
            continue
        if name in not_parts and not_parts[name].startswith(OUTSIDE_WORD):
            role, why = outside_role(name, lock)
            how[name] = f"{not_parts[name]}; {why}"
            if role is not None:
                roles[name] = role
            continue
        if name in not_parts:  # the parser's word: a statistic, a part nested in another
            roles[name], how[name] = "info", f"{not_parts[name]}: never summed"
            continue
        role, why = guess_role(name)
        if llm and set(name_words(name)) & LLM_PHASES:
            role, why = "gpu_compute", "an LLM's prefill or decode phase (a prefill is printed): GPU work"
        if role == "gpu_compute" and cpu_tree:
            role, why = None, f"{why}, but a CPU program's timer tree (no GPU in sight): no role from a name alone"
        how[name] = why
        if role is not None:
            roles[name] = role
    counters = [x.lower() for x in _names(parsed, "quantities", "name")]
    noun = next((n for key, n in RECORD_NOUNS if key in counters), None)
    if noun is None:
        noun = next((n for key, n in RECORD_NOUNS if key == whole.lower()), "record")
    plural = "batches" if noun == "batch" else noun + "s"
    summed = getattr(parsed, "format", None) == "lines"  # (kv leaves a record without its held key unknown)
    held_how = (getattr(parsed, "whole_basis", "") or "found by the parser") if whole else (
        "no field is the whole: each record's held time is the sum of its parts" if summed
        else "the log prints no held key: held time unknown (--model FILE.toml names it)")
    vocab = Vocabulary(record=noun, records=plural, whole="lock-held time" if lock else f"{noun} time",
                       held=whole or ("sum of parts" if summed else "held"), unit=noun, units=plural, lock=lock)
    return RoleModel(name=GUESSED, held=whole, roles=roles, source="<guessed from the log's names>",
                     vocabulary=vocab, how=how, held_how=held_how)


def user_model(model) -> RoleModel | None:
    """--model: a RoleModel as is, a TOML path loaded, None for none (then model_for guesses)."""
    if model is None or isinstance(model, RoleModel):
        return model
    return load_model(model)


def held_key(model: RoleModel | None) -> str:
    """The held key to parse with: the user's model's, else the CuZK default."""
    return model.held if model is not None and model.held else "mutex_held"


def vocabulary_of(analysis) -> Vocabulary:
    """The words for an Analysis: its model's (`analysis.model`), else the CuZK or the generic ones."""
    v = getattr(getattr(analysis, "model", None), "vocabulary", None)
    if isinstance(v, Vocabulary):
        return v
    return CUZK_VOCABULARY if getattr(analysis, "model_name", BUILTIN) == BUILTIN else Vocabulary()


def model_for(parsed, model=None) -> RoleModel:
    """The role model to analyze `parsed` with: `model` (a RoleModel or a TOML path: the user's word
    wins); else the built-in CuZK model for cuzk / condensed logs and for logs that print its held key
    or mostly its component names; else `guess_model(parsed)`."""
    if isinstance(model, RoleModel):
        return model
    if model is not None:
        return load_model(model)
    builtin = load_model()
    if getattr(parsed, "format", None) in ("cuzk", "condensed"):
        return builtin
    ordered = _names(parsed, "components", "component")
    names = set(ordered)
    known = {c for c in names if c in builtin.roles}
    if builtin.held in names or (known - GENERIC_NAMES and len(known) * 2 > len(names)):
        return builtin
    return guess_model(parsed, ordered)
