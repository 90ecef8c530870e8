"""Reports: the ``push-report`` tool, the report list and final reports."""
