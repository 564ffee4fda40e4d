"""fluvial's benchmarks: `python -m bench [J1 J2 ...]`. Each prints fluvial's records/s beside a plain-Python
loop doing the same work in the same run, and their ratio (this machine is noisy: read ratios)."""
