"""Tests for calc.py: `python3 test_calc.py` exits 0 when they pass."""

import sys
import unittest

from calc import add, mul


class CalcTest(unittest.TestCase):
    def test_add(self):
        self.assertEqual(add(2, 3), 5)

    def test_mul(self):
        self.assertEqual(mul(2, 3), 6)


if __name__ == "__main__":
    # The report has no timings, so a recorded session replays to the byte.
    result = unittest.TestResult()
    unittest.defaultTestLoader.loadTestsFromTestCase(CalcTest).run(result)
    for test, trace in result.failures + result.errors:
        print(f"FAIL: {test.id()}\n{trace}")
    failed = len(result.failures) + len(result.errors)
    if failed:
        print(f"FAILED ({failed} of {result.testsRun} tests)")
        sys.exit(1)
    print(f"OK ({result.testsRun} tests)")
