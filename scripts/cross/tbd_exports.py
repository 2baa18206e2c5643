#!/usr/bin/env python3
"""Prints the symbols a text-based dylib stub (.tbd, format v4, as Zig ships libSystem's) exports
for one target, one per line: what a Mach-O link against that library resolves.

Usage: tbd_exports.py FILE.tbd TARGET   (TARGET as the stub spells it: x86_64-macos, arm64-macos)
A stub that cannot be read, or that exports nothing for TARGET, is an error (exit 1)."""
import sys

try:
    import yaml
except ImportError:
    sys.exit("tbd_exports.py: PyYAML is needed (Debian package python3-yaml)")


def main():
    if len(sys.argv) != 3:
        sys.exit("usage: tbd_exports.py FILE.tbd TARGET")
    path, target = sys.argv[1], sys.argv[2]

    class StubLoader(yaml.SafeLoader):
        pass

    # Each document is tagged (!tapi-tbd); the tag says nothing the fields do not.
    StubLoader.add_multi_constructor(
        "!", lambda loader, suffix, node: loader.construct_mapping(node, deep=True))
    try:
        with open(path, encoding="utf-8") as f:
            documents = list(yaml.load_all(f, Loader=StubLoader))
    except (OSError, yaml.YAMLError) as e:
        sys.exit(f"tbd_exports.py: cannot read {path}: {e}")
    names = set()
    for doc in documents:
        for section in (doc or {}).get("exports", []) or []:
            if target not in section.get("targets", []):
                continue
            names.update(section.get("symbols", []) or [])
            names.update(section.get("weak-symbols", []) or [])
    if not names:
        sys.exit(f"tbd_exports.py: {path} exports nothing for {target}")
    sys.stdout.write("".join(n + "\n" for n in sorted(names)))


if __name__ == "__main__":
    main()
