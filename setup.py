"""The compiled line scanner, an optional C extension: pyproject.toml holds the metadata and
the package list; this file only adds gpuscope.parsers._scan (parsers/_scan.c). It is
optional: without a C compiler (or Python headers) the build goes on without it and the
Python scanners read every line (docs/ARCHITECTURE.md, "The compiled scanner")."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gpuscope.parsers._scan",
            sources=["parsers/_scan.c"],
            optional=True,
            extra_compile_args=["-O2"],
        )
    ]
)
