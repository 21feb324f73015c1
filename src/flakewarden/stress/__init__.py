"""Stress runs: phases under tightened timing, order and seeds, and the verdict they earn.

Reuses the runner's processes and plugin; its verdict is what quarantine policy reads.
"""
