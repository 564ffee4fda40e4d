"""Receivers: push sources enter through a BlockGenerator, a block handler and the tracker (DESIGN 2.5)."""
