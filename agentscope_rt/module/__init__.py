"""State that can be saved and loaded: :class:`StateModule`."""

from ._state_module import StateModule

__all__ = ["StateModule"]
