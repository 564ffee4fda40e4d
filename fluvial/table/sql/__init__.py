"""Flink SQL: a sqlglot dialect for Flink's syntax, and the conversion of statements to plans."""
