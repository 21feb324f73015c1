"""A small exception hierarchy: callers catch by meaning, the CLI turns each into an exit code."""

from __future__ import annotations

from flakewarden.model import ExitCode


class FlakewardenError(Exception):
    """Base class; the message is one line a user can act on."""

    exit_code: int = ExitCode.INTERNAL_ERROR


class UsageError(FlakewardenError):
    """Bad command line: unknown option, empty command, command not found."""

    exit_code = ExitCode.USAGE_ERROR


class ConfigError(UsageError):
    """A malformed or invalid configuration file."""


class ReportError(FlakewardenError):
    """A report file that cannot be read or written."""


class ReportMissing(ReportError):
    """No report where one was expected."""


class CoverageError(FlakewardenError):
    """Coverage data that is missing, corrupt or cannot be combined."""


class GitHubError(FlakewardenError):
    """The GitHub API refused or failed a request."""


class HistoryError(FlakewardenError):
    """A history database that cannot be opened, read or written (corrupt, foreign, too new)."""

    exit_code = ExitCode.USAGE_ERROR
