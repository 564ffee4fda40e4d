"""`python -m docsite`: rewrite the generated pages of docs/ from the code."""

from docsite.references import write_all

if __name__ == "__main__":
    for path in write_all():
        print(f"wrote {path}")
