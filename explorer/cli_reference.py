"""``python -m explorer.cli_reference > docs/cli.md``: print the command reference."""
from .cli import cli_reference

if __name__ == "__main__":
    print(cli_reference(), end="")
