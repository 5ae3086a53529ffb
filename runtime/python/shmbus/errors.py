"""The exceptions of shmbus.

Every error the C++ libraries raise arrives as an :class:`Error` (or one of
its subclasses) carrying the C++ message and the exit code the shmbus
programs use for it: 1 runtime failure, 2 bad usage or configuration,
3 not found.
"""

from __future__ import annotations


class Error(Exception):
    """A shmbus error: ``str(e)`` is the C++ message, ``e.exit_code`` the
    programs' exit code for it, ``e.code`` its kind (``"not_found"``, ...)."""

    code = "resource"
    exit_code = 1

    def __init__(self, message: str, code: str | None = None, exit_code: int | None = None) -> None:
        super().__init__(message)
        if code is not None:
            self.code = code
        if exit_code is not None:
            self.exit_code = exit_code


class InvalidArgumentError(Error, ValueError):
    """A bad name, size, value or option given in code (exit 2)."""

    code = "invalid_argument"
    exit_code = 2


class ConfigError(Error):
    """A configuration file that cannot be used (exit 2)."""

    code = "config"
    exit_code = 2


class NotFoundError(Error, LookupError):
    """A channel, service, type or domain that does not exist (exit 3)."""

    code = "not_found"
    exit_code = 3


class TypeMismatchError(Error, TypeError):
    """A channel opened with another type than it has (exit 2)."""

    code = "type_mismatch"
    exit_code = 2


class LayoutError(Error):
    """A segment of another layout, corrupt or truncated (exit 1)."""

    code = "layout_mismatch"


class ResourceError(Error):
    """A full table or a failed system call (exit 1)."""

    code = "resource"


class PermissionDeniedError(Error):
    """A segment owned by someone else, or too widely open (exit 1)."""

    code = "permission"


class OverwrittenError(Error):
    """A view of a message in shared memory was overwritten by a publisher
    (the ring lapped the reader): what was read from it cannot be trusted."""

    code = "overwritten"


class ServiceTimeout(Error, TimeoutError):
    """A service did not answer within the timeout (exit 1)."""

    code = "timeout"


class ServiceFailed(Error):
    """A service's handler failed on the request (exit 1)."""

    code = "server_error"


_BY_CODE = {
    cls.code: cls
    for cls in (InvalidArgumentError, ConfigError, NotFoundError, TypeMismatchError, LayoutError, ResourceError,
                PermissionDeniedError)
}


def _make(code: str, exit_code: int, message: str) -> Error:
    """The exception for a C++ shmbus::Error (called by the extension)."""
    return _BY_CODE.get(code, Error)(message, code, exit_code)
