"""The code stays readable in short modules: no file of the package over 400 lines."""
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]
MAX_LINES = 400


def test_no_module_of_the_package_is_over_400_lines():
    long = {str(path.relative_to(REPO_ROOT)): n
            for path in sorted((REPO_ROOT / "tinynet").rglob("*.py"))
            if (n := len(path.read_text(encoding="utf-8").splitlines())) > MAX_LINES}
    assert long == {}, f"split these modules (lines): {long}"
