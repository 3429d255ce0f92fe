"""PyYAML is imported with the listed form of its reader's NON_PRINTABLE check (gangsched.api._pyyaml): the
two forms must match exactly the same code points, and the listed one must be what the reader holds once
gangsched's CLI is imported (in a fresh interpreter: this one may have imported yaml before gangsched)."""

from __future__ import annotations

import re
import subprocess
import sys

from gangsched.api._pyyaml import NON_PRINTABLE, NON_PRINTABLE_AS_LISTED


def _matched(pattern: str) -> list[int]:
    every = "".join(map(chr, range(sys.maxunicode + 1)))
    return [m.start() for m in re.compile(pattern).finditer(every)]


def test_both_forms_match_the_same_code_points() -> None:
    matched = _matched(NON_PRINTABLE)
    assert matched == _matched(NON_PRINTABLE_AS_LISTED)
    # by hand from the YAML 1.1 spec's printable set: C0 controls but TAB, LF, CR; DEL and C1 controls but
    # NEL; surrogates; U+FFFE and U+FFFF
    assert len(matched) == 29 + 33 - 1 + 2048 + 2
    assert {0x00, 0x0B, 0x7F, 0x9F, 0xD800, 0xFFFF} <= set(matched)
    assert not {0x09, 0x0A, 0x0D, 0x20, 0x85, 0xA0, 0xFFFD, 0x10000, 0x10FFFF} & set(matched)


def _fresh(code: str) -> list[str]:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


def test_the_pattern_is_pyyamls() -> None:
    """PyYAML imported on its own still compiles this very pattern (else the listed form would silently
    not be used)."""
    code = (
        "import yaml.reader; from gangsched.api._pyyaml import NON_PRINTABLE; "
        "print(yaml.reader.Reader.NON_PRINTABLE.pattern == NON_PRINTABLE)"
    )
    assert _fresh(code) == ["True"]


def test_the_cli_imports_yaml_with_the_listed_form() -> None:
    code = (
        "import re; compile_ = re.compile; import gangsched.cli, yaml.reader; "
        "print(yaml.reader.Reader.NON_PRINTABLE.pattern == gangsched.api._pyyaml.NON_PRINTABLE_AS_LISTED, "
        "re.compile is compile_)"
    )
    assert _fresh(code) == ["True", "True"]
