"""gangsched imports lightkube's models without lightkube's HTTP client
(gangsched._lightkube_client_deferred): loading, validating and scheduling never import httpx2 or asyncio,
and everything the package `lightkube` defines is there when something asks for it (live mode, the tests
against an API server), with the usual errors for names it does not define. Each case runs in a fresh
interpreter: this one has lightkube imported already."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

EXAMPLE = str(Path(__file__).parent.parent / "examples" / "eight-gpu")
CLIENT_MODULES = ("lightkube.core.client", "lightkube.core.async_client", "httpx2", "asyncio")


def _run(code: str) -> str:
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    assert done.returncode == 0, done.stderr
    return done.stdout.strip()


def test_schedule_imports_the_models_without_the_client() -> None:
    code = (
        "import sys; from click.testing import CliRunner; import gangsched.cli; "
        "from lightkube.models import core_v1; "
        f"result = CliRunner().invoke(gangsched.cli.main, ['schedule', '-f', {EXAMPLE!r}, '-o', 'json']); "
        "assert result.exit_code == 0, result.output; assert 'gpu-node' in result.output; "
        f"print(sorted(m for m in {CLIENT_MODULES!r} if m in sys.modules))"
    )
    assert _run(code) == "[]"


def test_the_client_is_there_when_asked_for() -> None:
    code = (
        "import gangsched.cli, lightkube; from lightkube import AsyncClient, Client, KubeConfig, codecs; "
        "print(Client.__module__, AsyncClient.__module__, KubeConfig.__name__, codecs.__name__, "
        "lightkube.ApiError.__name__, lightkube.models.core_v1.Pod.__name__)"
    )
    assert _run(code).split() == [
        "lightkube.core.client",
        "lightkube.core.async_client",
        "KubeConfig",
        "lightkube.codecs",
        "ApiError",
        "Pod",
    ]


def test_a_name_lightkube_does_not_define_is_the_usual_error() -> None:
    code = (
        "import gangsched, lightkube\n"
        "try:\n    lightkube.NoSuchName\nexcept AttributeError as e:\n    print(type(e).__name__)\n"
        "try:\n    from lightkube import NoSuchName\nexcept ImportError as e:\n    print(type(e).__name__)\n"
    )
    assert _run(code).split() == ["AttributeError", "ImportError"]
