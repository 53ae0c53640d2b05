"""The one exception type that reaches the user as a message instead of a traceback."""


class UserError(Exception):
    """A problem the user can fix: a bad config value, a bad data file, a missing plugin.

    The message is one paragraph saying what is wrong, where (file, column, row or config key)
    and what to do. The command line prints it and exits with code 2.
    """


class RehearsalFailed(Exception):
    """A rehearsal (`mode=rehearse`) ran to the end, but some planted change was not recovered
    within its tolerance. Its outputs are kept; the command line prints the message (the
    failed checks) and exits with code 3."""
