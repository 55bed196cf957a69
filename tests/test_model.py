from __future__ import annotations

import pytest

from gpuscope.analysis import analyze
from gpuscope.errors import InputError, UsageError
from gpuscope.rolemodel import load_model, model_from_dict
from tests.analysis_builders import LogBuilder, src


def test_builtin_cuzk_model_roles():
    m = load_model()
    assert m.name == "cuzk" and m.held == "mutex_held"
    assert m.role_of("ntt_kernels") == "h2d"
    assert m.role_of("msm") == "gpu_compute" and m.role_of("msm_invoke") == "gpu_compute"
    assert m.role_of("barrier_wait") == "cpu_stall"
    assert m.role_of("mutex_wait") == "contention"
    assert m.role_of("prep_msm") == "cpu"
    assert m.role_of("gpu_total") == "info"
    assert m.role_of("no_such_thing") is None
    assert m.contains["ntt_kernels"].inner == "h2d"
    assert m.contains["ntt_kernels"].remainder_role == "gpu_compute"


def _write(tmp_path, text):
    p = tmp_path / "m.toml"
    p.write_text(text)
    return p


@pytest.mark.parametrize(
    "text, key",
    [
        ('held = "x"\n[roles]\nwarp = ["a"]\n', "roles.warp"),
        ('[roles]\nh2d = ["a"]\n', "'held'"),
        ('held = "x"\n[roles]\nh2d = "a"\n', "roles.h2d"),
        ('held = "x"\n[roles]\nh2d = ["a"]\ngpu_compute = ["a"]\n', "roles.gpu_compute"),
        ('held = "x"\n[roles]\nh2d = ["x"]\n', "roles.h2d"),
        ('held = "x"\nfoo = 1\n[roles]\nh2d = ["a"]\n', "'foo'"),
        ('held = "x"\n[roles]\nh2d = ["a"]\ncpu = ["b"]\n[contains]\na = { inner = "b", remainder_role = "gpu_compute" }\n',
         "contains.a.inner"),
        ('held = "x"\n[roles]\nh2d = ["a", "b"]\n[contains]\na = { inner = "b", remainder_role = "cpu" }\n',
         "contains.a.remainder_role"),
    ],
)
def test_invalid_models_name_file_and_key(tmp_path, text, key):
    p = _write(tmp_path, text)
    with pytest.raises(UsageError) as e:
        load_model(p)
    msg = str(e.value)
    assert str(p) in msg and key in msg
    assert e.value.exit_code == 2


def test_bad_toml_and_missing_file(tmp_path):
    p = _write(tmp_path, "held = \n")
    with pytest.raises(UsageError, match="invalid TOML"):
        load_model(p)
    with pytest.raises(InputError):
        load_model(tmp_path / "nope.toml")


def test_user_model_maps_own_names(tmp_path):
    p = _write(
        tmp_path,
        'name = "mine"\nheld = "lock_held"\n[roles]\nh2d = ["upload"]\ngpu_compute = ["kernel"]\n'
        'cpu_stall = ["wait_cpu"]\n',
    )
    m = load_model(p)
    assert m.name == "mine"
    b = LogBuilder("kv")
    r = len(b.recs)
    b.value("upload", 30, record=r)
    b.value("kernel", 50, record=r)
    b.value("wait_cpu", 5, record=r)
    b.recs.append(dict(record=r, first_line=1, last_line=3, ts_start=float("nan"), ts_end=float("nan"),
                       n_gpus=1, held_ms=100.0, complete=True))
    a = analyze(src(b.build(), m))
    assert a.log.split["h2d_ms"] == 30 and a.log.split["gpu_compute_ms"] == 50
    assert a.log.split["cpu_stall_ms"] == 5 and a.log.split["other_ms"] == 15


def test_model_from_dict_defaults_name_from_source():
    m = model_from_dict({"held": "h", "roles": {"h2d": ["a"]}}, source="/x/pipeline.toml")
    assert m.name == "pipeline" and m.contains == {}
