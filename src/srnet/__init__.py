"""srnet: sparse and robust subnetworks inside pre-trained transformer language models."""

from srnet.errors import SrnetError

__version__ = "0.1.0"
__all__ = ["SrnetError", "__version__"]
