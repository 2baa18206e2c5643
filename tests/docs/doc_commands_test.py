#!/usr/bin/env python3
"""Runs the commands of README.md and docs/**/*.md against a build tree, so that the docs cannot
drift from what the programs do.

Every ```sh and ```console fence of those files is preceded by a marker line (an HTML comment,
invisible on GitHub):
  <!-- runnable -->              run it; it must exit 0
  <!-- runnable exit=N -->       run it; it must exit N
  <!-- not runnable: REASON -->  never run (root, network, a fleet, minutes, a placeholder
                                 program): the reason is said, and a fence without a marker fails
A ```cpp fence may be preceded by <!-- example: examples/FILE.cc -->: its lines must be that
file's, in order (a line `// ...` or `...` stands for lines left out), so that the code shown is
code the build compiles.

A ```sh block runs as one bash script (set -e -o pipefail). A ```console block is commands
(`$ ` lines, `\\` continuing them) each followed by the output it shows; the command's stdout and
stderr (one pipe) must match it: numbers, 0x addresses and 16-hex-digit ids are placeholders,
spaces are collapsed, a line `...` stands for any number of lines and `...` inside a line for any
text. The blocks of one file run in order in one scratch directory that looks like the source
tree (its top-level entries linked) with `build` the build tree and `hangwatch`, the examples and
the test fixtures on PATH, so a page reads like one session.

Usage: doc_commands_test.py SOURCE_DIR BUILD_DIR [FILE.md...]
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time

MARKER = re.compile(r"^<!--\s*(runnable(?:\s+exit=(\d+))?|not runnable:.*\S.*|example:\s*(\S+))\s*-->$")
FENCE = re.compile(r"^(\s*)```(\w*)\s*$")
BLOCK_TIMEOUT_S = 60


def blocks(path):
    """Yields (line, lang, marker_match_or_None, body_lines) for each fenced block."""
    lines = open(path, encoding="utf-8").read().split("\n")
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        indent, lang = m.group(1), m.group(2)
        start = i
        j = i + 1
        while j < len(lines) and lines[j].strip() != "```":
            j += 1
        body = [l[len(indent):] if l.startswith(indent) else l for l in lines[i + 1:j]]
        prev = lines[start - 1].strip() if start > 0 else ""
        yield start + 1, lang, MARKER.match(prev), body
        i = j + 1


def normalize(line):
    line = re.sub(r"\b[0-9a-f]{16}\b", "H", line)
    line = re.sub(r"0x[0-9a-fA-F]+", "0xH", line)
    line = re.sub(r"[0-9]+([.,][0-9]+)*", "N", line)
    # 1 sample, 2 samples; 1 unique stack, 2 unique stacks (how many a run's timing gives)
    line = re.sub(r"(N (?:[A-Za-z]+ )?[A-Za-z]+?)s\b", r"\1", line)
    return " ".join(line.split())


def output_matches(expected, actual):
    """expected: the doc's lines; actual: the program's output."""
    pattern = ""
    for line in expected:
        if line.strip() == "...":
            pattern += r"(?:[^\n]*\n)*?"  # any number of lines
            continue
        parts = normalize(line).split("...")
        pattern += ".*?".join(re.escape(p) for p in parts) + r"\n"
    text = "".join(normalize(l) + "\n" for l in actual.split("\n") if l.strip())
    return re.fullmatch(pattern, text) is not None


def console_commands(body):
    """[(command, [expected output lines])] of a console block."""
    result = []
    i = 0
    while i < len(body):
        line = body[i]
        if not line.startswith("$ "):
            i += 1
            continue
        command = line[2:]
        while command.endswith("\\") and i + 1 < len(body):
            i += 1
            command = command[:-1] + " " + body[i].strip()
        i += 1
        out = []
        while i < len(body) and not body[i].startswith("$ "):
            if body[i].strip():
                out.append(body[i])
            i += 1
        result.append((command, out))
    return result


def run(script, cwd, env):
    # Output to a file, not a pipe: a command the block leaves in the background (`sleep 60 &`)
    # keeps a pipe open, and reading it would wait for that command too.
    with tempfile.TemporaryFile() as out:
        p = subprocess.run(["bash", "-e", "-o", "pipefail", "-c", script], cwd=cwd, env=env,
                           stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL,
                           timeout=BLOCK_TIMEOUT_S)
        out.seek(0)
        return p.returncode, out.read().decode("utf-8", "replace")


def scratch(source, build):
    d = tempfile.mkdtemp(prefix="hangwatch-docs.")
    for entry in os.listdir(source):
        if entry not in ("build", ".git") and not entry.startswith("build-"):
            os.symlink(os.path.join(source, entry), os.path.join(d, entry))
    os.symlink(build, os.path.join(d, "build"))
    return d


def check_file(path, source, build, env):
    failures = []
    shown = os.path.relpath(path, source)
    work = scratch(source, build)
    try:
        for line, lang, marker, body in blocks(path):
            where = f"{shown}:{line}"
            if lang in ("sh", "console"):
                if marker is None or marker.group(3):
                    failures.append(f"{where}: a ```{lang} block without <!-- runnable --> or "
                                    "<!-- not runnable: REASON --> before it")
                    continue
                if not marker.group(1).startswith("runnable"):
                    continue
                want = int(marker.group(2) or 0)
                if lang == "sh":
                    steps = [("\n".join(body), None)]
                else:
                    steps = console_commands(body)
                for command, expected in steps:
                    started = time.monotonic()
                    try:
                        status, out = run(command, work, env)
                    except subprocess.TimeoutExpired:
                        failures.append(f"{where}: `{command}` took over {BLOCK_TIMEOUT_S} s")
                        continue
                    took = time.monotonic() - started
                    print(f"{where}: {took:5.2f} s, exit {status}: {command.splitlines()[0][:90]}")
                    if status != want:
                        failures.append(f"{where}: `{command}` exited {status}, the doc says "
                                        f"{want}; its output:\n{out}")
                    elif expected is not None and expected and not output_matches(expected, out):
                        failures.append(f"{where}: `{command}` printed what the doc does not show."
                                        "\n--- the doc:\n" + "\n".join(expected) +
                                        "\n--- the program:\n" + out)
            elif lang == "cpp" and marker is not None and marker.group(3):
                failures += check_example(where, body, os.path.join(source, marker.group(3)))
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return failures


def check_example(where, body, example):
    """The block's lines are the example file's, in order, `// ...` skipping lines."""
    try:
        lines = open(example, encoding="utf-8").read().split("\n")
    except OSError as e:
        return [f"{where}: {example}: {e.strerror}"]
    pos = 0
    contiguous = True
    for want in body:
        if want.strip() in ("...", "// ..."):
            contiguous = False
            continue
        if contiguous and pos > 0:
            if pos < len(lines) and lines[pos] == want:
                pos += 1
                continue
            return [f"{where}: `{want.strip()}` does not follow the line before it in {example}"]
        try:
            pos = lines.index(want, pos) + 1
        except ValueError:
            return [f"{where}: `{want.strip()}` is not in {example} (after line {pos})"]
        contiguous = True
    return []


def main(argv):
    if len(argv) < 3:
        print(__doc__, file=sys.stderr)
        return 2
    source, build = os.path.abspath(argv[1]), os.path.abspath(argv[2])
    files = argv[3:]
    if not files:
        files = [os.path.join(source, "README.md")]
        for dirpath, dirnames, filenames in os.walk(os.path.join(source, "docs")):
            dirnames.sort()
            files += [os.path.join(dirpath, f) for f in sorted(filenames) if f.endswith(".md")]
    env = dict(os.environ)
    env.pop("DEBUGINFOD_URLS", None)
    env["PATH"] = os.pathsep.join([os.path.join(build, "tools"), os.path.join(build, "examples"),
                                   os.path.join(build, "tests", "tools"), env.get("PATH", "")])
    cache = tempfile.mkdtemp(prefix="hangwatch-docs-cache.")
    env["HANGWATCH_CACHE_DIR"] = cache
    failures = []
    try:
        for f in files:
            failures += check_file(os.path.abspath(f), source, build, env)
    finally:
        shutil.rmtree(cache, ignore_errors=True)
    for f in failures:
        print("FAIL " + f, file=sys.stderr)
    print(f"{len(files)} files, {len(failures)} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
