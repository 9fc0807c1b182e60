"""Area formulas.

triangle_area has a real bug (it forgets to halve base * height) that the
scripted agent in this example never touches: it only fiddles with PI.
"""

# Precision of pi used by circle_area.
PI = 3.14159


def rectangle_area(width, height):
    if width < 0 or height < 0:
        raise ValueError("sides must be non-negative")
    return width * height


def circle_area(radius):
    if radius < 0:
        raise ValueError("radius must be non-negative")
    return PI * radius * radius


def triangle_area(base, height):
    if base < 0 or height < 0:
        raise ValueError("sides must be non-negative")
    return base * height
