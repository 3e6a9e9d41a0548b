"""The one error type of specmodel: messages written for the person using the tool."""


class SpecModelError(ValueError):
    """Bad input or an impossible scenario; the message says what was wrong and what to do."""
