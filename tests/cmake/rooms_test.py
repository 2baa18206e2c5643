#!/usr/bin/env python3
"""The build keeps the layers below the agent free of it (cmake/layers.cmake, hangwatch_room).

Checks the build tree given, not made-up input: the command line's libraries that read and
write open-hang and JSON Lines files (tools/reader, tools/run, the CLI itself, fuzz/'s
open_hang_file_fuzzer when the tree has it) link no agent library; and each room's sources
cannot include a header of a room above it (nor a sibling it does not link), while they can
include the rooms below. The includes are tried with the room's own compile command
(preprocessing only), so the check is what the build enforces.

Usage: rooms_test.py BUILD_DIR NINJA
"""
import os
import re
import shlex
import subprocess
import sys
import tempfile

SOURCE_DIR = os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "..")

# (output in build.ninja, what it must link) for the readers and writers of hang files.
OFFLINE = [
    ("tools/reader/libhangwatch_tool_reader.a", "hang/libhangwatch_open_hang.a"),
    ("tools/run/libhangwatch_tool_run.a", "hang/libhangwatch_hang_files.a"),
    ("tools/hangwatch", "hang/libhangwatch_open_hang.a"),
    ("fuzz/open_hang_file_fuzzer", "hang/libhangwatch_open_hang.a"),
]

# (room library, the room's folder, headers it must not see, a header below it that it sees).
ROOMS = [
    ("hang/libhangwatch_hang_files.a", "hang/files",
     ["hang/model/hang_data.h", "agent/core/stall_monitor.h"], None),
    ("hang/libhangwatch_hang_model.a", "hang/model",
     ["hang/open_hang/open_hang_file.h", "agent/core/stall_monitor.h",
      "agent/samplers/wait_cause_probe.h"], "report/stack_identity.h"),
    ("hang/libhangwatch_open_hang.a", "hang/open_hang",
     ["agent/core/agent_internal.h", "agent/sinks/hang_sink.h"], "hang/model/hang_data.h"),
    ("agent/libhangwatch_agent_samplers.a", "agent/samplers",
     ["agent/core/stall_monitor.h", "agent/sinks/hang_sink.h"], "hang/model/wait_cause.h"),
    ("agent/libhangwatch_agent_sinks.a", "agent/sinks",
     ["agent/core/exit_flush.h", "agent/samplers/platform_sampler.h"],
     "hang/files/jsonl_writer.h"),
    ("agent/libhangwatch_agent.a", "agent/core", [], "agent/samplers/platform_sampler.h"),
]


def build_statement(ninja_text, output):
    """The `build OUTPUT: ...` statement of build.ninja, or None."""
    m = re.search(r"^build " + re.escape(output) + r":.*$", ninja_text, re.M)
    return m.group(0) if m else None


def room_compile_command(commands, folder):
    """The arguments of one compilation of a source of `folder`, without its outputs."""
    for line in commands.splitlines():
        args = shlex.split(line)
        if "-c" in args and ("/" + folder + "/") in args[args.index("-c") + 1]:
            kept, skip = [], False
            for i, a in enumerate(args):
                if skip:
                    skip = False
                    continue
                if a in ("-MT", "-MF", "-o", "-c"):
                    skip = True
                    continue
                if a == "-MD":
                    continue
                kept.append(a)
            return kept
    return None


def compiles(build_dir, command, header):
    """Whether a source including `header` finds it with `command`; the compiler's stderr."""
    with tempfile.NamedTemporaryFile("w", suffix=".cc", delete=False) as f:
        f.write('#include "%s"\n' % header)
    try:
        # Preprocessing alone finds (or misses) every header: no need to parse them.
        r = subprocess.run(command + ["-E", "-o", os.devnull, f.name], cwd=build_dir,
                           capture_output=True, text=True)
        return r.returncode == 0, r.stderr
    finally:
        os.unlink(f.name)


def main():
    build_dir, ninja = sys.argv[1], sys.argv[2]
    with open(os.path.join(build_dir, "build.ninja")) as f:
        ninja_text = f.read()
    failures = []
    for output, wanted in OFFLINE:
        stmt = build_statement(ninja_text, output)
        if stmt is None:
            if not output.startswith("fuzz/"):
                failures.append("%s: not in build.ninja" % output)
            continue
        if "libhangwatch_agent" in stmt:
            failures.append("%s links the agent: %s" %
                            (output, " ".join(sorted(set(re.findall(
                                r"\S*libhangwatch_agent\S*", stmt))))))
        if wanted not in stmt:
            failures.append("%s does not link %s" % (output, wanted))
    # The commands that build the rooms' libraries (one ninja call: it reads build.ninja once).
    commands = subprocess.run([ninja, "-C", build_dir, "-t", "commands"] +
                              [room[0] for room in ROOMS],
                              capture_output=True, text=True).stdout
    for library, folder, forbidden, allowed in ROOMS:
        command = room_compile_command(commands, folder)
        if command is None:
            failures.append("%s: no compilation of a source of %s/" % (library, folder))
            continue
        for header in forbidden:
            if not os.path.exists(os.path.join(SOURCE_DIR, header)):
                failures.append("%s: no such header in the tree (the test is out of date)" % header)
                continue
            ok, err = compiles(build_dir, command, header)
            if ok or header not in err:
                failures.append("%s/ can include %s (above it, or not linked)" % (folder, header))
        if allowed:
            ok, err = compiles(build_dir, command, allowed)
            if not ok:
                failures.append("%s/ cannot include %s, below it: %s" %
                                (folder, allowed, err.strip().splitlines()[0]))
    for f in failures:
        print("rooms_test: " + f)
    print("rooms_test: %s" % ("FAILED" if failures else "passed"))
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
