"""Checkpoints: coordination, barrier alignment, storage, retained checkpoints, restore (DESIGN 2.3)."""
