# The bases of the classes shmbus.msggen writes (PKG.pyi): type-checking
# only. At run time a generated type is a MessageType and its messages are
# shmbus.Message objects; a checker sees each type's own class, whose
# fields are declared (a misspelled one is an error) and whose message
# has no catch-all attribute.
from typing import Any, Generic, TypeVar

from numpy.typing import NDArray

from ._messages import MessageType
from . import MessageInfo

M = TypeVar("M")

class TypedMessage:
    """What every message has, besides its fields. ``type``, ``raw`` and
    ``info`` too, declared on each generated class that has no field of
    the name (a field wins)."""
    _type: MessageType
    _raw: NDArray[Any]
    _info: MessageInfo | None
    def to_dict(self) -> dict[str, Any]: ...
    def __bytes__(self) -> bytes: ...
    def __len__(self) -> int: ...
    def __init__(self, _fields: dict[str, Any] | None = None, /, **fields: Any) -> None: ...

class MessageClass(MessageType, Generic[M]):  # a MessageType known to make M
    """A generated type: a MessageType whose messages are M."""
    def new(self, _fields: dict[str, Any] | None = None, /, **fields: Any) -> M: ...  # type: ignore[override]
    def __call__(self, _fields: dict[str, Any] | None = None, /, **fields: Any) -> M: ...  # type: ignore[override]
    def decode(self, data: Any, info: Any = None) -> M: ...  # type: ignore[override]
