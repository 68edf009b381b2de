"""The terminal: srnet's own progress bars, tables and one-line notes, and nothing from libraries.

:func:`quiet_libraries` is what the CLI, the demo and the benchmarks call first: library
warnings, load reports and download bars are silenced, and srnet's own log records (e.g.
``new classifier head (3 labels) on top of ...``) print as plain lines on stderr.  Used as a
library, srnet leaves logging to the application but still loads models quietly
(:func:`srnet.models.loading.quiet_transformers`).
"""

from __future__ import annotations

import logging
import os
import sys
import warnings


def quiet_libraries() -> None:
    """Silence third-party warnings, logs and progress bars; show srnet's INFO notes as lines."""
    os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")
    warnings.simplefilter("ignore")
    from transformers.utils import logging as hf_logging

    hf_logging.disable_progress_bar()
    hf_logging.set_verbosity_error()
    for name in ("accelerate", "datasets", "huggingface_hub", "torch"):
        logging.getLogger(name).setLevel(logging.ERROR)
    srnet_log = logging.getLogger("srnet")
    if not any(isinstance(h, _StderrHandler) for h in srnet_log.handlers):
        handler = _StderrHandler()
        handler.setFormatter(logging.Formatter("%(message)s"))
        srnet_log.addHandler(handler)
        srnet_log.setLevel(logging.INFO)


class _StderrHandler(logging.StreamHandler):
    """Writes to whatever ``sys.stderr`` is at the time (tests and tools replace it)."""

    @property
    def stream(self):
        return sys.stderr

    @stream.setter
    def stream(self, value) -> None:
        pass


def end_progress_bars() -> None:
    """Close open progress bars, so a final message (error, Ctrl-C) starts on its own line."""
    from tqdm import tqdm

    for bar in list(getattr(tqdm, "_instances", ())):
        bar.close()
    sys.stderr.flush()
