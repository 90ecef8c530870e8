"""Tests of the daemon, one folder per package of ``src/heron/runtime`` (``server``, ``db``,
``nodes``, ``events`` and each feature). A new test goes in the folder of the package whose
behaviour it checks, in a module named for that behaviour (``test_postgres.py`` for the
package's PostgreSQL variant); what several modules need (fixtures, helpers, waits with
``eventually``) goes in ``tests/support``, never imported from another test module."""
