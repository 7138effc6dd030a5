"""``python -m explorer.cli``: the ``explorer`` command."""
from . import main

if __name__ == "__main__":
    main()
