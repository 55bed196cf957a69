"""Evidence from NVML samples: the sample grid per GPU, activity, transfers, PCIe per phase."""
