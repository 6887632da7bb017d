"""The lab's measurements: each module runs from the repository root as `python -m benchmarks.NAME`."""
