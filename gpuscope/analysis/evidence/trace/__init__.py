"""Evidence from a profiler trace: device activity, copies, idle gaps, phases, top kernels."""
