"""The one exception type that user-facing code raises for bad input.

Every ``SrnetError`` message is a single line that names the file, field or value at
fault; the CLI prints it as ``error: <message>`` and exits with status 2.  A
:class:`NeedsOption` names the option that lifts it in the caller's terms (API keyword or flag).
"""


class SrnetError(Exception):
    """Bad input or an impossible request, explained in one line."""


class NeedsOption(SrnetError):
    """A refusal that an option lifts.  The message names each option as the API's keyword
    (``resume=True``); :meth:`with_flags` names the CLI's flags (``--resume``) instead."""

    def __init__(self, message: str, *options: str) -> None:
        super().__init__(message)
        self.options = options

    def with_flags(self) -> str:
        """The message for the command line: ``name=True`` becomes ``--name``."""
        message = str(self)
        for name in self.options:
            message = message.replace(f"{name}=True", f"--{name.replace('_', '-')}")
        return message
