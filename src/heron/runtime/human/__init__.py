"""Human requests: questions nodes put to a person, and the inbox."""
