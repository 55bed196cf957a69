"""Three optional C extensions: pyproject.toml holds the metadata and the package list; this file
only adds gpuscope.parsers._scan (parsers/_scan.c, the compiled line scanner),
gpuscope.parsers._samples (parsers/_samples.c, the compiled samples.csv reader),
and gpuscope._groupstats (gpuscope/_groupstats.c, pandas' groupby sums and variances). All are optional: without a C compiler (or Python headers) the build goes on without them, the
Python scanners read every line, pandas' parser reads samples.csv and pandas computes the
statistics (docs/ARCHITECTURE.md, "The compiled scanner")."""

from setuptools import Extension, setup

setup(
    ext_modules=[
        Extension(
            "gpuscope.parsers._scan",
            sources=["parsers/_scan.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "gpuscope.parsers._samples",
            sources=["parsers/_samples.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
        Extension(
            "gpuscope._groupstats",
            sources=["gpuscope/_groupstats.c"],
            optional=True,
            extra_compile_args=["-O2"],
        ),
    ]
)
