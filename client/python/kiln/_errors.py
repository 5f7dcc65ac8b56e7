"""The one exception type of the kiln package."""

# The canonical status codes (gRPC, absl::StatusCode and kiln_status share the values).
CODE_NAMES = {
    0: "OK", 1: "CANCELLED", 2: "UNKNOWN", 3: "INVALID_ARGUMENT", 4: "DEADLINE_EXCEEDED",
    5: "NOT_FOUND", 6: "ALREADY_EXISTS", 7: "PERMISSION_DENIED", 8: "RESOURCE_EXHAUSTED",
    9: "FAILED_PRECONDITION", 10: "ABORTED", 11: "OUT_OF_RANGE", 12: "UNIMPLEMENTED",
    13: "INTERNAL", 14: "UNAVAILABLE", 15: "DATA_LOSS", 16: "UNAUTHENTICATED",
}


class KilnError(Exception):
    """An error from kilnd, the runtime library or the client itself.

    Attributes:
        code: the status code's name, as gRPC spells it ("NOT_FOUND", "UNAUTHENTICATED",
            "INVALID_ARGUMENT", "DATA_LOSS", ...).
        message: what went wrong; for a server call, "<Rpc>: <server message>" as the C++
            client reports it (e.g. "Compile: ...").
    """

    def __init__(self, code, message):
        if isinstance(code, int):
            code = CODE_NAMES.get(code, "UNKNOWN")
        self.code = code
        self.message = message
        super().__init__(f"{code}: {message}")
