"""The ``ui-ux-design`` skill: visual and interaction quality of user-facing screens."""

from __future__ import annotations

from ..tools import Skill

__all__ = ["ui_ux_design"]

_DESCRIPTION = (
    "Use this skill when you build or change anything a person looks at or clicks: web pages, "
    "app screens, forms, dashboards, emails. It covers layout, hierarchy, feedback states, "
    "accessibility and responsiveness."
)

_INSTRUCTIONS = """\
- Start from the user's main task on the screen: make that action the most prominent
  element, and put secondary actions after it with less visual weight.
- Build a clear hierarchy with size, weight and spacing rather than colour alone: one main
  heading, a consistent type scale, and related items grouped closer together than
  unrelated ones.
- Use a small spacing scale (for example 4, 8, 16, 24, 32 px) and align elements to a grid;
  reuse the project's existing design tokens, component library and styles first.
- Give every interactive element all its states: hover, focus (a visible focus ring),
  active, disabled, loading. Every data view needs a loading, an empty and an error state
  that says what happened and what the user can do next.
- Accessibility is part of done: text contrast of at least 4.5:1, labels on every input,
  alt text on meaningful images, real buttons and links rather than clickable divs, full
  keyboard operation, and ARIA only where native elements cannot express the meaning.
- Design mobile first: layouts must work from 320 px wide up, with touch targets of at
  least 44 px and no horizontal scrolling of the page.
- Write interface text that is short and specific: buttons say what they do ("Save
  changes", not "OK"); error messages say how to fix the problem.
- Confirm destructive actions or make them undoable; never lose what the user typed.
- When a browser or screenshot tool is available, look at the result at a narrow and a wide
  size before calling it finished.
"""


def ui_ux_design() -> Skill:
    """The ``ui-ux-design`` skill: design guidance only, no tools of its own."""
    return Skill(
        name="ui-ux-design",
        description=_DESCRIPTION,
        instructions=_INSTRUCTIONS,
    )
