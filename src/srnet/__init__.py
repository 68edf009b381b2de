"""srnet: sparse and robust subnetworks inside pre-trained transformer language models."""

from srnet.errors import SrnetError

__version__ = "0.1.0"
__all__ = ["SrnetError", "__version__", "load_model"]


def __getattr__(name: str):
    """``srnet.load_model`` without importing torch at ``import srnet``."""
    if name == "load_model":
        from srnet.api import load_model

        return load_model
    raise AttributeError(f"module 'srnet' has no attribute {name!r}")
