"""Text -> pandas DataFrames. Pure: no rich, no cupy, no NVML, no printing."""
