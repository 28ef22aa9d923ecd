"""The test suite, laid out like the package it tests; shared helpers in `support`."""
