"""The documentation site's generated parts: the configuration, metrics and REST references and the Grafana
dashboard, built from the code (`python -m docsite` writes them; tests/unit/docs checks they are current)."""
