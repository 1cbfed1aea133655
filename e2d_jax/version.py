"""The library's version."""
__version__ = "0.4.0"
