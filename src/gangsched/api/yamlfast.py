"""Multi-document YAML to Python objects: `yaml.load_all(text, CSafeLoader)`, about 1.5x faster.

PyYAML's C loader parses in C but composes nodes, resolves tags and constructs objects in Python, several
calls per scalar; for 100,000 pods that is most of the loading time. Here libyaml's events are turned into
dicts, lists and scalars by one loop. Plain scalars that are not null, a bool or a decimal int are resolved
and constructed by PyYAML itself (floats, timestamps, octal and hex ints...), so values are PyYAML's, in
YAML 1.1 as Kubernetes' go-yaml v2 reads them. A document with anything the loop does not do — anchors,
aliases, explicit tags, merge keys, complex keys — makes the whole text go through plain `yaml.load_all`.
Syntax errors are libyaml's; they are raised by re-reading with `yaml.load_all`, so message and position
are exactly PyYAML's. tests/api/test_yamlfast.py checks equality with PyYAML on generated documents.

>>> load_all("a: 1\\n---\\n- x\\n- {b: null, c: yes, d: 1.5}\\n")
[{'a': 1}, ['x', {'b': None, 'c': True, 'd': 1.5}]]
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from typing import Any

import yaml
from yaml.events import (
    DocumentEndEvent,
    MappingEndEvent,
    MappingStartEvent,
    ScalarEvent,
    SequenceEndEvent,
    SequenceStartEvent,
    StreamEndEvent,
)
from yaml.nodes import ScalarNode

__all__ = ["iter_all", "load_all"]

_Loader: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
_STR = "tag:yaml.org,2002:str"
_MERGE = "tag:yaml.org,2002:merge"
_NULLS = {"", "~", "null", "Null", "NULL"}
_BOOLS = {
    **dict.fromkeys(["yes", "Yes", "YES", "true", "True", "TRUE", "on", "On", "ON"], True),
    **dict.fromkeys(["no", "No", "NO", "false", "False", "FALSE", "off", "Off", "OFF"], False),
}
_DECIMAL = re.compile(r"[-+]?(?:0|[1-9][0-9]*)\Z")  # 012 (octal), 0x1F, 1_000 and 1:30 go to PyYAML
_NO_KEY = object()


class _Unsupported(Exception):
    """Something only PyYAML's full loader does: re-read the whole text with it."""


def _plain(loader: Any, value: str) -> Any:
    """A plain (unquoted, untagged) scalar, resolved as PyYAML's SafeLoader resolves it."""
    if value in _NULLS:
        return None
    if value in _BOOLS:
        return _BOOLS[value]
    if _DECIMAL.match(value):
        return int(value)
    tag = loader.resolve(ScalarNode, value, (True, False))
    if tag == _STR:
        return value
    construct = loader.yaml_constructors.get(tag)
    if construct is None or tag == _MERGE:
        raise _Unsupported
    return construct(loader, ScalarNode(tag, value))


def _documents(loader: Any) -> Iterator[Any]:
    get = loader.get_event
    get()  # StreamStartEvent
    while type(get()) is not StreamEndEvent:  # a DocumentStartEvent
        stack: list[list[Any]] = []  # [container, pending mapping key]
        root: Any = None
        while True:
            event = get()
            kind = type(event)
            if kind is ScalarEvent:
                if event.anchor is not None:
                    raise _Unsupported
                if event.implicit[0]:
                    value: Any = _plain(loader, event.value)
                elif event.tag in (None, "!", _STR):
                    value = event.value
                else:
                    raise _Unsupported
            elif kind is MappingStartEvent or kind is SequenceStartEvent:
                if event.anchor is not None or (event.tag is not None and not event.implicit):
                    raise _Unsupported
                stack.append([{} if kind is MappingStartEvent else [], _NO_KEY])
                continue
            elif kind is MappingEndEvent or kind is SequenceEndEvent:
                value = stack.pop()[0]
            elif kind is DocumentEndEvent:
                break
            else:  # AliasEvent
                raise _Unsupported
            if not stack:
                root = value
                continue
            top = stack[-1]
            if type(top[0]) is list:
                top[0].append(value)
            elif top[1] is _NO_KEY:
                if type(value) is dict or type(value) is list:
                    raise _Unsupported
                top[1] = value
            else:
                top[0][top[1]] = value
                top[1] = _NO_KEY
        yield root


def iter_all(text: str) -> Iterator[Any]:
    """Every document of `text`, empty ones as None, one at a time (so that a caller can drop each after
    use), as `yaml.load_all(text, CSafeLoader)` yields them. Raises yaml.YAMLError exactly as PyYAML does,
    after the documents before the error."""
    loader = _Loader(text)
    done = 0
    try:
        for doc in _documents(loader):
            yield doc
            done += 1
        return
    except (_Unsupported, yaml.YAMLError):
        pass  # PyYAML takes over below: it gives the same documents, then its own result or error
    finally:
        loader.dispose()
    for i, doc in enumerate(yaml.load_all(text, Loader=_Loader)):
        if i >= done:
            yield doc


def load_all(text: str) -> list[Any]:
    """`list(iter_all(text))`."""
    return list(iter_all(text))
