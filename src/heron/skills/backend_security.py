"""The ``backend-security`` skill: hardening server code at its trust boundaries."""

from __future__ import annotations

from ..tools import Skill

__all__ = ["backend_security"]

_DESCRIPTION = (
    "Use this skill when server-side code touches a trust boundary: authentication, sessions, "
    "tokens, passwords, file uploads, database queries, payments, user-supplied URLs or "
    "anything reachable from the network."
)

_INSTRUCTIONS = """\
- Treat every input from outside as hostile: request bodies, query strings, headers,
  cookies, file names, webhooks. Validate type, length and format against an allow-list at
  the boundary and reject what does not fit with a 4xx response.
- Database access uses parameterised queries or the ORM's bound parameters only; never build
  SQL, shell commands or file paths by pasting user input into a string.
- Passwords are hashed with a slow, salted algorithm (argon2, bcrypt or scrypt) from a
  maintained library; never store, log or return them in plain text.
- Check authorisation on every request, on the server, for the specific object requested
  (the caller owns it or has the role), not just that the caller is logged in.
- Session and token handling: cookies are HttpOnly, Secure and SameSite; tokens are random
  from a cryptographic source, expire, and are verified with their signature and audience.
  Compare secrets in constant time.
- File uploads: cap the size, check the content type by content rather than by name, store
  under generated names outside the web root, and never let a client-supplied path escape
  the upload directory.
- Outgoing requests to user-supplied URLs can reach internal services: allow-list hosts or
  block private and loopback addresses.
- Secrets come from the environment or a secret store, never from the repository, logs or
  error messages. Errors returned to clients are generic; details go to the server log.
- Add rate limits to login, signup and password reset, and keep dependencies current.
- When you review existing code, list each finding with its location, the risk and the fix,
  most severe first, and fix them unless the user asked only for a review.
"""


def backend_security() -> Skill:
    """The ``backend-security`` skill: a security checklist, no tools of its own.

    Pair it with a backend skill that brings the file and shell tools::

        skills = [python_backend("app"), backend_security()]
    """
    return Skill(
        name="backend-security",
        description=_DESCRIPTION,
        instructions=_INSTRUCTIONS,
    )
