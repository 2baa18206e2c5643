#!/usr/bin/env python3
"""scripts/check-function-length.py: a function of 151 lines fails, one of 150 passes, and
braces in comments, literals and preprocessor branches are not counted."""
import os
import subprocess
import sys
import tempfile
import unittest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
CHECK = os.path.join(ROOT, "scripts", "check-function-length.py")


def function(name, body_lines, filler="  x += 1;"):
    """A function whose closing brace is `body_lines` lines below its opening one."""
    return "int %s(int x) {\n%s\n}\n" % (name, "\n".join([filler] * (body_lines - 1)))


class FunctionLengthTest(unittest.TestCase):
    def check(self, source):
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "f.cc")
            with open(path, "w") as f:
                f.write(source)
            r = subprocess.run([sys.executable, CHECK, path], capture_output=True, text=True)
            return r.returncode, r.stdout.replace(path, "f.cc")

    def test_151_lines_fail_150_pass(self):
        self.assertEqual(self.check(function("Fits", 150))[0], 0)
        status, out = self.check("namespace a {\n" + function("TooLong", 151) + "}\n")
        self.assertEqual(status, 1)
        self.assertIn("f.cc:2: TooLong is 151 lines (limit 150)", out)

    def test_methods_constructors_and_tests(self):
        src = ("struct S {\n  S() : a_{1}, b_(2) {\n" + "    a_++;\n" * 151 + "  }\n"
               "  int a_, b_;\n};\n"
               "void S::Run() const noexcept {\n" + "  a_++;\n" * 151 + "}\n"
               "TEST(Suite, Case) {\n" + "  EXPECT_TRUE(true);\n" * 151 + "}\n")
        status, out = self.check(src)
        self.assertEqual(status, 1)
        self.assertEqual(out.count("is 152 lines"), 3, out)
        self.assertIn("S::Run", out)
        self.assertIn("TEST", out)

    def test_lambda_at_namespace_scope(self):
        src = "auto kLambda = [](int x) {\n" + "  x++;\n" * 151 + "  return x;\n};\n"
        self.assertEqual(self.check(src)[0], 1)

    def test_braces_in_comments_literals_and_branches_do_not_count(self):
        noise = [
            '  const char* s = "{{{ } \\" {";',
            "  char c = '{';",
            "  // }}} {",
            "  /* { */",
            '  auto r = R"x(}}})" {)x";',
            "  int big = 1'000'000;",
        ]
        body = "\n".join(noise * 10)  # 60 lines
        src = ("#if defined(A)\nvoid F() {\n#else\nvoid F(int) {\n#endif\n" + body + "\n}\n"
               + function("After", 151))
        status, out = self.check(src)
        self.assertEqual(status, 1, out)
        self.assertIn("After is 151 lines", out)
        self.assertNotIn(" F is", out)

    def test_initializers_and_scopes_are_not_functions(self):
        src = ("namespace n {\nclass C {\n public:\n  int f();\n};\n"
               "const int kTable[] = {\n" + "  1,\n" * 200 + "};\n"
               "enum class E {\n" + "  k,\n" * 200 + "};\n}  // namespace n\n"
               'extern "C" {\n' + function("Inside", 10) + "}\n")
        self.assertEqual(self.check(src)[0], 0)

    def test_unreadable_file(self):
        r = subprocess.run([sys.executable, CHECK, "/nonexistent/f.cc"], capture_output=True,
                           text=True)
        self.assertEqual(r.returncode, 2)
        self.assertIn("/nonexistent/f.cc", r.stderr)


if __name__ == "__main__":
    unittest.main()
