"""The package version (the compiler's version is kiln-<this>+src...)."""

__version__ = "0.1.0"
