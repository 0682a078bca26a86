"""Placeholder for the `openai` Python package, put on the path only when the real one is absent.

That package comes from PyPI alone (Debian has none), and CI reaches only the npm and Debian
registries. Importing this module lets the test files that import it run their other tests; a test
that constructs a client is skipped, naming the reason, and is therefore not among the tests whose
pass the runner requires. The same calls are made by the real `openai` npm package in minfer's own
client tests.
"""

import pytest


class OpenAI:
    def __init__(self, *args, **kwargs):
        pytest.skip("the openai Python package is not installed (PyPI only)")
