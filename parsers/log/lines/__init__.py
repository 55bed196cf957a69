"""Format `lines`: timing lines as people print them (the format's own documentation is the
docstring of gpuscope.parsers.log.lines.read, its entry point). Nothing is imported here:
the modules are imported by name."""
