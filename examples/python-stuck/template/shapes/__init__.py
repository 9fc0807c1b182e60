"""Tiny geometry helpers used by the python-stuck loopexec example."""

from .geometry import circle_area, rectangle_area, triangle_area

__all__ = ["circle_area", "rectangle_area", "triangle_area"]
