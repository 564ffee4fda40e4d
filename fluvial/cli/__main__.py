"""`python -m fluvial.cli` is the `fluvial` command too (the documented spelling is `python -m fluvial`)."""

from fluvial.cli import main

if __name__ == "__main__":
    main()
