"""setup.cfg ships every package: a plain ``pip install .`` imports what the checkout does."""
import configparser
from pathlib import Path

REPO_ROOT = Path(__file__).resolve().parents[1]


def listed_packages():
    config = configparser.ConfigParser()
    config.read(REPO_ROOT / "setup.cfg")
    return {line.strip() for line in config["options"]["packages"].splitlines() if line.strip()}


def test_every_package_directory_is_listed_in_setup_cfg():
    found = {
        ".".join(init.parent.relative_to(REPO_ROOT).parts)
        for init in (REPO_ROOT / "tinynet").rglob("__init__.py")
    }
    found |= {                                  # kernels/ is installed as tinynet.kernels
        ".".join(("tinynet",) + init.parent.relative_to(REPO_ROOT).parts)
        for init in (REPO_ROOT / "kernels").rglob("__init__.py")
    }
    assert found - listed_packages() == set(), "packages missing from setup.cfg"
    assert listed_packages() - found == set(), "setup.cfg lists packages that do not exist"
