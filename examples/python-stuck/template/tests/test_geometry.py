import unittest

from shapes import circle_area, rectangle_area, triangle_area


class RectangleTests(unittest.TestCase):
    def test_area(self):
        self.assertEqual(rectangle_area(3, 4), 12)

    def test_rejects_negative_sides(self):
        with self.assertRaises(ValueError):
            rectangle_area(-1, 2)


class CircleTests(unittest.TestCase):
    def test_unit_circle(self):
        self.assertAlmostEqual(circle_area(1), 3.14159, places=3)

    def test_zero_radius(self):
        self.assertEqual(circle_area(0), 0)


class TriangleTests(unittest.TestCase):
    def test_area_is_half_base_times_height(self):
        self.assertEqual(triangle_area(4, 3), 6)

    def test_rejects_negative_sides(self):
        with self.assertRaises(ValueError):
            triangle_area(2, -1)


if __name__ == "__main__":
    unittest.main()
