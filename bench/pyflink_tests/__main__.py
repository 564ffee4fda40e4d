"""`python -m bench.pyflink_tests [--source DIR] [-k EXPR]`: see the package's docstring."""

import sys

from bench.pyflink_tests.runner import main

sys.exit(main(sys.argv[1:]))
