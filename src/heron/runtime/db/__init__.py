"""The daemon's database: one SQLAlchemy engine shared with DBOS, its tables and migrations."""
