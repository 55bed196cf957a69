"""gpuscope: profile and diagnose GPU pipelines (where the time under the GPU lock goes)."""

from gpuscope import _layout

__version__ = "0.1.0"

_layout.install()  # a source checkout run without the installed mapping: see gpuscope/_layout.py
