"""Adapters that bring srnet into other libraries' training loops (``transformers.Trainer``)."""
