"""Import PyYAML without compiling the slow form of its pure-Python reader's character check.

`yaml.reader.Reader` compiles, when `yaml` is imported, a negated character class over all of Unicode,
`NON_PRINTABLE`, to find characters YAML does not allow in a stream. Python's `re` takes about 8 ms of CPU
on this project's machine to compile that form (it builds bitmaps of the whole range), half of everything
`import yaml` costs, at every start of every gangsched command; and gangsched reads YAML with libyaml
(`yaml.CSafeLoader`, api/yamlfast.py), whose parser checks characters itself and never uses the Reader.

While `yaml` is imported here, that one pattern is compiled in its complementary form: the same set of
characters, listed as the few ranges it holds instead of the many it does not (about 0.3 ms). Every other
`re.compile` call goes through unchanged, and `re.compile` is put back as soon as the import ends.
tests/api/test_pyyaml.py checks that both forms match exactly the same code points. The api package
imports this module before any of its modules imports `yaml`; if `yaml` was imported already, nothing
changes.
"""

from __future__ import annotations

import re
import sys
from typing import Any

__all__ = ["NON_PRINTABLE", "NON_PRINTABLE_AS_LISTED"]

# As yaml/reader.py (PyYAML 6) spells it: anything not TAB, LF, CR, printable ASCII, NEL, or the rest of
# Unicode but surrogates, U+FFFE and U+FFFF.
NON_PRINTABLE = "[^\x09\x0a\x0d\x20-\x7e\x85\xa0-\ud7ff\ue000-\ufffd\U00010000-\U0010ffff]"
# The same characters, listed.
NON_PRINTABLE_AS_LISTED = "[\x00-\x08\x0b\x0c\x0e-\x1f\x7f-\x84\x86-\x9f\ud800-\udfff\ufffe\uffff]"


def _import_yaml() -> None:
    if "yaml" in sys.modules:
        return
    compile_ = re.compile

    def quick(pattern: Any, flags: Any = 0) -> re.Pattern[Any]:
        return compile_(NON_PRINTABLE_AS_LISTED if pattern == NON_PRINTABLE else pattern, flags)

    re.compile = quick
    try:
        import yaml  # noqa: F401  (kept in sys.modules for the api's modules)
    finally:
        re.compile = compile_


_import_yaml()
