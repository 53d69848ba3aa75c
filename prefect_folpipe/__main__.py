"""``python -m prefect_folpipe`` runs the ``folpipe`` CLI."""

from prefect_folpipe.cli import main

if __name__ == "__main__":
    main()
