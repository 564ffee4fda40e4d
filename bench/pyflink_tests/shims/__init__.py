"""JVM-free stand-ins for what PyFlink's DataStream tests import from PyFlink's Java-backed test utilities (the
rewrite in `bench.pyflink_tests.runner` points those imports here)."""
