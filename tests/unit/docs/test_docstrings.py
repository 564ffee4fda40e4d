"""Every public class, function and method at PyFlink's paths (docsite/pyflink_surface.txt, with `pyflink.`
read as `fluvial.`) and of `fluvial.testing` has a docstring, so the API reference and `help()` say what it
does. A new public name without a docstring fails. `undocumented.txt` lists the few known exceptions (methods
another branch is rewriting); it may only shrink: a name documented since must leave it."""

from __future__ import annotations

from pathlib import Path

from docsite.api_surface import public_objects, undocumented

KNOWN = Path(__file__).with_name("undocumented.txt")


def _known() -> set[str]:
    return {line for line in KNOWN.read_text().splitlines() if line and not line.startswith("#")}


def test_the_surface_is_found() -> None:
    assert len(list(public_objects())) > 900


def test_every_new_public_name_has_a_docstring() -> None:
    new = sorted(set(undocumented()) - _known())
    assert not new, "add a docstring (what it does, its parameters, what it returns and raises) to: " + ", ".join(new)


def test_the_list_of_undocumented_names_only_shrinks() -> None:
    documented_since = sorted(_known() - set(undocumented()))
    assert not documented_since, (
        f"these have a docstring now (or are gone): remove them from {KNOWN.name}: {', '.join(documented_since)}"
    )
