"""``python -m usebench ...``: the `bench` command without an installed entry point (as ``python -m usebench.cli``)."""
from usebench.cli.main import main

if __name__ == "__main__":
    main(prog_name="bench")
