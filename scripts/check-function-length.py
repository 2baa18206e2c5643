#!/usr/bin/env python3
"""check-function-length.py: no function body longer than 150 lines (the house rule that
.clang-tidy's readability-function-size enforces), checked from the sources alone in about a
second, so that CI runs it on every file (scripts/test.sh) where clang-tidy over the tree takes
25 minutes.

A function's length is counted as clang-tidy counts it: the line of its closing brace minus the
line of its opening brace. The sources are read by a small tokenizer that skips comments, string
and character literals (raw strings included) and preprocessor lines, so a brace in any of them
is never counted; of an #if/#elif/#else chain only the first branch is read (the branches of one
chain open the same function in different ways). A brace block at namespace or class scope whose
head (the tokens since the last ';', '{' or '}') has a parenthesis and no '=' is a function body
(a constructor's member initializer with braces is measured too, and is short); class, struct,
union, enum, namespace and extern "C" blocks are scopes; an initializer after '=' is skipped,
unless it is a lambda. Lambdas and local classes count in the function around them.

Usage: scripts/check-function-length.py [--max N] [FILE_OR_DIR...]
  (no argument: the .cc and .h files of the product's folders and of tests/, bench/, fuzz/,
  examples/, include/)
Exit 0 when every function fits, 1 with one line per function that does not
(FILE:LINE: FUNCTION is N lines (limit 150)), 2 for a file it cannot read.
"""
import os
import re
import sys

MAX_LINES = 150
FOLDERS = ["agent", "cause", "python", "report", "symbols", "unwind", "integrations", "tools",
           "include", "tests", "bench", "fuzz", "examples"]
SCOPE_WORDS = {"namespace", "class", "struct", "union", "enum"}


def tokens(text):
    """Yields (kind, value, line) with kind one of 'word', 'punct'; comments, literals and
    preprocessor lines are dropped (an #if chain's second and later branches too)."""
    i, n, line = 0, len(text), 1
    at_line_start = True
    pp_stack = []  # per open #if: True while in a branch after the first
    skipping = lambda: any(pp_stack)
    word = re.compile(r"[A-Za-z_][A-Za-z_0-9]*")
    while i < n:
        c = text[i]
        if c == "\n":
            line += 1
            i += 1
            at_line_start = True
            continue
        if c in " \t\r\f\v":
            i += 1
            continue
        if c == "#" and at_line_start:
            # A directive, with its continuation lines.
            j = i
            while True:
                k = text.find("\n", j)
                if k < 0:
                    k = n
                # A comment may end the directive's line; a block comment may span lines.
                seg = text[j:k]
                if "/*" in seg and "*/" not in seg[seg.index("/*"):]:
                    end = text.find("*/", j + seg.index("/*"))
                    k = text.find("\n", end if end >= 0 else n)
                    if k < 0:
                        k = n
                if k > i and text[k - 1] == "\\" and k < n:
                    j = k + 1
                    continue
                break
            directive = text[i:k]
            m = re.match(r"#\s*(\w+)", directive)
            name = m.group(1) if m else ""
            if name in ("if", "ifdef", "ifndef"):
                pp_stack.append(False)
            elif name in ("elif", "else", "elifdef", "elifndef") and pp_stack:
                pp_stack[-1] = True
            elif name == "endif" and pp_stack:
                pp_stack.pop()
            line += directive.count("\n")
            i = k
            continue
        at_line_start = False
        if text.startswith("//", i):
            k = text.find("\n", i)
            i = n if k < 0 else k
            continue
        if text.startswith("/*", i):
            k = text.find("*/", i + 2)
            k = n if k < 0 else k + 2
            line += text.count("\n", i, k)
            i = k
            continue
        m = word.match(text, i)
        if m:
            w = m.group(0)
            end = m.end()
            # Raw string: R"delim( ... )delim", with an optional encoding prefix.
            if w in ("R", "LR", "uR", "UR", "u8R") and end < n and text[end] == '"':
                p = text.find("(", end)
                delim = text[end + 1:p]
                close = text.find(")" + delim + '"', p)
                close = n if close < 0 else close + len(delim) + 2
                line += text.count("\n", i, close)
                i = close
                continue
            if w in ("L", "u", "U", "u8") and end < n and text[end] in "\"'":
                i = end  # an encoding prefix: the literal follows
                continue
            if not skipping():
                yield ("word", w, line)
            i = end
            continue
        if c in "\"'":
            # A digit separator (1'000'000) is not a character literal.
            if c == "'" and i > 0 and text[i - 1].isalnum():
                i += 1
                continue
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 1
                elif text[j] == "\n":
                    break  # unterminated: stop at the line's end
                j += 1
            line += text.count("\n", i, j)
            i = j + 1
            continue
        if c.isdigit():
            m = re.compile(r"[0-9A-Za-z_.']+").match(text, i)
            i = m.end()
            continue
        if not skipping():
            yield ("punct", c, line)
        i += 1


def long_functions(path, text, limit):
    """Returns [(line, name, length)] for the function bodies longer than `limit` lines."""
    found = []
    # Each open brace: ('scope'|'function'|'skip', open line, name)
    stack = []
    head = []  # tokens since the last ';', '{' or '}' at this level
    in_body = lambda: any(kind in ("function", "skip") for kind, _, _ in stack)
    for kind, value, line in tokens(text):
        if in_body():
            if value == "{":
                stack.append(("inner", line, ""))
            elif value == "}":
                k, open_line, name = stack.pop()
                if k == "function" and line - open_line > limit:
                    found.append((open_line, name, line - open_line))
                if not in_body():
                    head = []
            continue
        if value == "{":
            words = [v for k, v, _ in head if k == "word"]
            puncts = [v for k, v, _ in head if k == "punct"]
            last = head[-1][1] if head else ""
            if SCOPE_WORDS & set(words) and "(" not in puncts or words[:1] == ["extern"]:
                stack.append(("scope", line, ""))
            elif "=" in puncts:
                is_lambda = last in (")", "]", "mutable", "noexcept") or (
                    head and head[-1][0] == "word" and "]" in puncts)
                stack.append(("function" if is_lambda else "skip", line, "lambda"))
            elif "(" in puncts:
                stack.append(("function", line, function_name(head)))
            else:
                stack.append(("skip", line, ""))
            head = []
        elif value == "}":
            if stack:
                stack.pop()
            head = []
        elif value == ";":
            head = []
        else:
            head.append((kind, value, line))
    return found


def function_name(head):
    """The qualified name before the head's first '(' (operator names included)."""
    for idx, (_, value, _) in enumerate(head):
        if value == "(":
            name = []
            j = idx - 1
            while j >= 0 and (head[j][0] == "word" or head[j][1] in ":~"):
                if head[j][0] == "word" and name and name[0] not in ":~" and head[j][1] != "operator":
                    break
                name.insert(0, head[j][1])
                j -= 1
            return "".join(name) or "function"
    return "function"


def source_files(args, root):
    if not args:
        args = [os.path.join(root, f) for f in FOLDERS if os.path.isdir(os.path.join(root, f))]
    for a in args:
        if os.path.isdir(a):
            for dirpath, dirnames, filenames in os.walk(a):
                dirnames.sort()
                for f in sorted(filenames):
                    if f.endswith((".cc", ".h", ".cpp", ".c")):
                        yield os.path.join(dirpath, f)
        else:
            yield a


def main(argv):
    limit = MAX_LINES
    args = argv[1:]
    if args[:1] == ["--max"]:
        if len(args) < 2 or not args[1].isdigit():
            print("check-function-length.py: --max needs a number of lines", file=sys.stderr)
            return 2
        limit = int(args[1])
        args = args[2:]
    root = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
    failures = 0
    files = 0
    for path in source_files(args, root):
        try:
            with open(path, encoding="utf-8", errors="replace") as f:
                text = f.read()
        except OSError as e:
            print(f"check-function-length.py: {path}: {e.strerror}", file=sys.stderr)
            return 2
        files += 1
        shown = os.path.relpath(path, root) if path.startswith(root + os.sep) else path
        for line, name, length in long_functions(path, text, limit):
            print(f"{shown}:{line}: {name} is {length} lines (limit {limit})")
            failures += 1
    if failures:
        print(f"check-function-length.py: {failures} function(s) over {limit} lines in {files} files",
              file=sys.stderr)
        return 1
    print(f"check-function-length.py: {files} files, every function within {limit} lines")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
