"""`python -m memsync` runs the command line."""

from memsync.cli import main

main(prog_name="memsync")
