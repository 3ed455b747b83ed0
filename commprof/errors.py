"""Exception types. The CLI turns each into one line and an exit code."""


class CommprofError(Exception):
    """Base class: a failure with a message meant for the user."""

    exit_code = 1


class UsageError(CommprofError):
    """Bad input: options, files, model specs. Exit code 2."""

    exit_code = 2


class TraceError(UsageError):
    """A trace file that cannot be used."""

    def __init__(self, path: str, problem: str):
        super().__init__(f"{path}: {problem}")
        self.path = path
        self.problem = problem


class WorkloadError(UsageError):
    """A model spec that cannot be loaded or does not train."""


class RunFailed(CommprofError):
    """The training job itself failed. Exit code 1."""

    def __init__(self, message: str, run_dir=None):
        super().__init__(message)
        self.run_dir = run_dir  # the run folder this failed run created (traces kept there), if any
