"""`python -m roofline`: the `roofline` command, through the entry point of its console script (pyproject.toml
[project.scripts]), for environments whose bin folder is not on PATH."""
import sys

from .cli import main

if __name__ == "__main__":  # importing this module (a tool listing the package) must not run the command
    sys.exit(main())
