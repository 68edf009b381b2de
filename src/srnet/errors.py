"""The one exception type that user-facing code raises for bad input.

Every ``SrnetError`` message is a single line that names the file, field or value at
fault; the CLI prints it as ``error: <message>`` and exits with status 2.
"""


class SrnetError(Exception):
    """Bad input or an impossible request, explained in one line."""
