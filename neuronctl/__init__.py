"""neuronctl: get PyTorch onto AWS Trainium and keep it there."""

from neuronctl._version import __version__

__all__ = ["__version__"]
