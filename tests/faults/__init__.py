"""Fault tests: real processes killed mid-run; nothing lost or duplicated after recovery."""
