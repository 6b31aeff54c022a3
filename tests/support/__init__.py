"""Helpers shared by the test files (fixtures live in tests/conftest.py)."""
