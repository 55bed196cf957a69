"""Profiler traces (PyTorch / Kineto Chrome traces): files, bytes, events -> typed frames."""
