"""`python -m swinfer`: the swinfer command-line tool."""

from ._segment import main

main()
