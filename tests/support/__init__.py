"""What the tests share: a real daemon, PostgreSQL, SSE reading, ``eventually`` and the
helpers of each runtime feature's tests. ``plugin`` holds the fixtures (registered in
``tests/conftest.py``); the other modules are imported by the tests that need them."""
