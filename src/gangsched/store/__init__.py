"""In-memory object store with change events."""

from .store import Change, Store, key_of

__all__ = ["Change", "Store", "key_of"]
