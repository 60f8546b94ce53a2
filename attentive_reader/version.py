"""The toolkit's version (floor 0: any module may import it, and the package root does)."""

__version__ = "0.1.0"
