"""``python -m usebench.cli ...``: the `bench` command without an installed entry point (e.g. a GPU node that
runs the repository from PYTHONPATH)."""
from usebench.cli.main import main

if __name__ == "__main__":
    main(prog_name="bench")
