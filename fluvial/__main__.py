"""`python -m fluvial ...` is the `fluvial` command."""

from fluvial.cli import main

if __name__ == "__main__":
    main()
