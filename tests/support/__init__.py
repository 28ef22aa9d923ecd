"""Helpers the tests share: the repository's root, a headless browser, a tiny trained checkpoint, the
synthetic data and small profile of the training tests, and the scripts imported as modules."""

from pathlib import Path

REPO = Path(__file__).resolve().parents[2]
