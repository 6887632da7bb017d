"""How the bundled models and the teacher pack's pages are made: `python -m scripts.NAME` from the repository root."""
