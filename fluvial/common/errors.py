"""The exception hierarchy. Every message names the problem and the fix, so a user never has to read our code."""

from __future__ import annotations


class FluvialError(Exception):
    """Base of every error fluvial raises on purpose."""


class InvalidJobError(FluvialError, ValueError):
    """The job description is wrong (bad parallelism, no sink, a window size of 0, ...)."""


class ConfigurationError(FluvialError, ValueError):
    """A configuration key or value is unknown or malformed."""


class NotYetSupportedError(FluvialError, NotImplementedError):
    """A PyFlink feature whose API fluvial has but whose runtime support is not built yet; the message names
    what is missing. Raised when the job is submitted, never silently ignored."""


class StateError(FluvialError):
    """Keyed or operator state was used wrongly (outside a keyed context, a name reused with another type)."""


class ResourceError(FluvialError):
    """The cluster cannot run the job as planned (too few slots, a missing directory)."""


class JobExecutionException(FluvialError):
    """A job failed while running. `__cause__` is the user's exception, with its traceback."""

    def __init__(self, message: str, job_id: str | None = None) -> None:
        super().__init__(message)
        self.job_id = job_id


class JobCancelledException(JobExecutionException):
    """A job was cancelled before it finished."""


class NonRecoverableError(FluvialError):
    """A failure no restart can fix (Flink's ThrowableType.NonRecoverableError), such as checkpoint data that
    cannot be read back: the job fails at once, whatever its restart strategy allows, instead of restoring the
    same unreadable state again and again. Recognized anywhere in an error's cause chain."""


class UnreadableStateError(NonRecoverableError):
    """Stored state cannot be turned back into objects: its bytes are damaged, or they were pickled by code this
    program no longer has (a class renamed or removed). The message names what was being restored."""


def is_non_recoverable(error: BaseException | None) -> bool:
    """Whether `error`, or any error in its chain of causes, is a NonRecoverableError."""
    seen: set[int] = set()
    while error is not None and id(error) not in seen:
        if isinstance(error, NonRecoverableError):
            return True
        seen.add(id(error))
        error = error.__cause__ or error.__context__
    return False
