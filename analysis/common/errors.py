"""The error a user's input raises; every layer may raise it, the CLI prints it."""

from __future__ import annotations


class InputError(Exception):
    """A user's input cannot be used; the CLI prints the message on one line and exits 2.

    The message names the file (and line or column where known) and says what to do.
    """
