"""Timing logs: the formats (formats.py), their readers and the parse result (ParsedLog)."""
