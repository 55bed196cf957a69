"""gpuscope: profile and diagnose GPU pipelines (where the time under the GPU lock goes)."""

__version__ = "0.1.0"
