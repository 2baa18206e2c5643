#!/usr/bin/env python3
"""doc_commands_test.py itself: a page whose command fails, exits otherwise than it says, prints
something else than it shows, has a command block without a marker, or shows code that is not
its example's fails the test; a page that matches passes."""
import os
import subprocess
import sys
import tempfile
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
HARNESS = os.path.join(HERE, "doc_commands_test.py")


class DocHarnessTest(unittest.TestCase):
    def run_page(self, page, files=None):
        with tempfile.TemporaryDirectory() as source, tempfile.TemporaryDirectory() as build:
            os.makedirs(os.path.join(build, "tools"))
            for name, text in (files or {}).items():
                os.makedirs(os.path.dirname(os.path.join(source, name)), exist_ok=True)
                with open(os.path.join(source, name), "w") as f:
                    f.write(text)
            path = os.path.join(source, "page.md")
            with open(path, "w") as f:
                f.write(page)
            r = subprocess.run([sys.executable, HARNESS, source, build, path],
                               capture_output=True, text=True)
            return r.returncode, r.stderr

    def test_matching_page_passes(self):
        page = ("<!-- runnable -->\n```console\n$ printf 'took 12 ms at 0x7f00\\n'\n"
                "took 345 ms at 0x5500\n```\n\n<!-- runnable exit=3 -->\n```sh\nexit 3\n```\n\n"
                "<!-- not runnable: a server -->\n```sh\nfalse\n```\n\n"
                "<!-- runnable -->\n```sh\necho x > f.txt\n```\n\n"
                "<!-- runnable -->\n```console\n$ cat f.txt; seq 3\nx\n...\n3\n```\n")
        self.assertEqual(self.run_page(page), (0, ""))

    def test_failing_command(self):
        status, err = self.run_page("<!-- runnable -->\n```sh\ntrue\nfalse\ntrue\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("exited 1, the doc says 0", err)

    def test_other_exit_status(self):
        status, err = self.run_page("<!-- runnable exit=3 -->\n```sh\nexit 0\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("exited 0, the doc says 3", err)

    def test_other_output(self):
        status, err = self.run_page("<!-- runnable -->\n```console\n$ echo 'hang: 12 ms'\n"
                                    "stall: 12 ms\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("printed what the doc does not show", err)

    def test_block_without_marker(self):
        status, err = self.run_page("```sh\ntrue\n```\n")
        self.assertEqual(status, 1)
        self.assertIn("without <!-- runnable -->", err)

    def test_example_code(self):
        example = {"examples/x.cc": "int main() {\n  int a = 1;\n  return a;\n}\n"}
        good = "<!-- example: examples/x.cc -->\n```cpp\nint main() {\n// ...\n  return a;\n}\n```\n"
        self.assertEqual(self.run_page(good, example), (0, ""))
        bad = good.replace("return a;", "return 0;")
        status, err = self.run_page(bad, example)
        self.assertEqual(status, 1)
        self.assertIn("is not in", err)


if __name__ == "__main__":
    unittest.main()
