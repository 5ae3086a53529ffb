#!/usr/bin/env python3
"""The layout check: the folder tree is the dependency graph.

  scripts/check-layout.py BUILD_DIR

reads BUILD_DIR/layout-targets.txt (written by cmake/ShmbusLayout.cmake at
configure time) and fails, one line per fault, where
  - a file of a library or program includes the public header of a library
    its target does not link (directly, or through a library's public links);
  - an include climbs out of its folder ("../");
  - a library or program links a target of a higher folder (runtime/ <
    daemon/ < tools/ < examples/);
  - a library links shmbus_cli (command-line parsing, CLI11): programs
    alone do;
  - the drawing in docs/architecture.md (the mermaid block after the line
    "<!-- layout: targets -->") is not the CMake link graph of the
    libraries and programs, drawn without the arrows another path implies.
Tests and benchmarks (tests/) are not checked: they may reach into a
library's src/ for a seam. Exit 0 clean, 1 with faults, 2 bad usage.
"""
import os
import re
import sys

ROOT = os.environ.get("SHMBUS_LAYOUT_ROOT") or os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
RANK = {"runtime": 0, "daemon": 1, "tools": 2, "examples": 3}
# Generated, or a test seam: drawn as part of the target that owns it.
HIDDEN = {"shmbus_gateway_envelope", "shmbus_core_test_seams"}
# Targets a build may leave out (the option that does): their arrows in the
# drawing are checked only where they are built. The Python module is not
# built in sanitizer and fuzzer builds (SHMBUS_BUILD_PYTHON).
OPTIONAL = {"python": "SHMBUS_BUILD_PYTHON"}
# Command-line parsing: linked by programs, never by a library.
CLI = "shmbus_cli"
INCLUDE = re.compile(r'^\s*#\s*include\s*[<"]([^>"]+)[>"]', re.M)


class Target:
    def __init__(self, line):
        name, kind, src, links, iface, includes, sources = line.rstrip("\n").split("|")
        self.name, self.kind, self.src = name, kind, src
        self.links = [x for x in links.split(",") if x]
        self.iface = [x for x in iface.split(",") if x]
        self.includes = [re.sub(r"^\$<BUILD_INTERFACE:(.*)>$", r"\1", x) for x in includes.split(",")
                         if x and not x.startswith("$<INSTALL_INTERFACE")]
        self.sources = [s if os.path.isabs(s) else os.path.join(src, s) for s in sources.split(",") if s]

    @property
    def folder(self):
        rel = os.path.relpath(self.src, ROOT)
        return rel.split(os.sep)[0]

    @property
    def checked(self):
        return self.folder in RANK and self.name not in HIDDEN

    @property
    def label(self):
        return self.name[len("shmbus_"):] if self.name.startswith("shmbus_") else self.name


def load(build):
    path = os.path.join(build, "layout-targets.txt")
    if not os.path.isfile(path):
        sys.exit(f"check-layout: {path} is missing; configure the build first (scripts/build.sh)")
    targets = {}
    with open(path) as f:
        for line in f:
            if line.strip():
                t = Target(line)
                targets[t.name] = t
    for t in targets.values():
        t.links = [x for x in t.links if x in targets]
        t.iface = [x for x in t.iface if x in targets]
    return targets


def visible(targets, name):
    """The libraries whose public headers `name` sees: itself, what it links
    and, through each of those, their public (interface) links."""
    seen, todo = {name}, list(targets[name].links + targets[name].iface)
    while todo:
        n = todo.pop()
        if n not in seen:
            seen.add(n)
            todo.extend(targets[n].iface)
    return seen


def header_owners(targets):
    """Public header path ("shmbus/record/mcap.hpp") -> the library it belongs to."""
    owners = {}
    for t in targets.values():
        inc = os.path.join(t.src, "include")
        if t.kind.endswith("LIBRARY") and os.path.isdir(inc) and t.checked:
            for d, _, files in os.walk(inc):
                for f in files:
                    owners[os.path.relpath(os.path.join(d, f), inc)] = t.name
    for pkg in os.listdir(os.path.join(ROOT, "runtime", "msg")):
        owners[pkg + "/"] = "shmbus_messages"
    return owners


def owner_of(owners, header):
    if header in owners:
        return owners[header]
    return owners.get(header.split("/")[0] + "/") if "/" in header else None


def check_includes(targets, owners, faults):
    public_dir = {t.name: os.path.join(t.src, "include") for t in targets.values()}
    for t in targets.values():
        if not t.checked:
            continue
        todo = [(s, t.name) for s in t.sources if s.startswith(ROOT + os.sep) and os.path.isfile(s)]
        done = set()
        while todo:
            path, ctx = todo.pop()
            if (path, ctx) in done:
                continue
            done.add((path, ctx))
            with open(path, errors="replace") as f:
                text = f.read()
            rel = os.path.relpath(path, ROOT)
            for header in INCLUDE.findall(text):
                if ".." in header.split("/"):
                    faults.append(f"{rel}: includes {header} by a relative path out of its folder")
                    continue
                lib = owner_of(owners, header)
                if lib is not None:
                    if lib not in visible(targets, ctx):
                        faults.append(f"{rel}: includes {header} of {lib}, which {ctx} does not link")
                        continue
                    found = os.path.join(public_dir[lib], header)
                    if os.path.isfile(found):
                        todo.append((found, lib))
                    continue
                for d in [os.path.dirname(path)] + targets[ctx].includes:
                    found = os.path.join(d, header)
                    if d.startswith(ROOT + os.sep) and os.path.isfile(found):
                        todo.append((found, ctx))
                        break


def check_links(targets, faults):
    for t in targets.values():
        if not t.checked:
            continue
        for l in t.links + t.iface:
            d = targets[l]
            if d.folder in RANK and RANK[d.folder] > RANK[t.folder]:
                faults.append(f"{t.name} ({t.folder}/) links {l} of the higher folder {d.folder}/")
            if l == CLI and t.kind.endswith("LIBRARY"):
                faults.append(f"{t.name} is a library and links {CLI}: the command line is its program's "
                              "(src/program.cpp); take the library's options as a struct")


def drawn_graph(targets):
    """The libraries and programs (not examples) with their direct links,
    minus the arrows a longer path implies."""
    names = {n for n, t in targets.items() if t.checked and t.folder != "examples"}
    names.add("shmbus_messages")
    edges = {n: {l for l in targets[n].links + targets[n].iface if l in names} for n in names}

    def reach(a, skip):
        seen, todo = set(), [x for x in edges[a] if (a, x) != skip]
        while todo:
            n = todo.pop()
            if n not in seen:
                seen.add(n)
                todo.extend(edges[n])
        return seen

    kept = set()
    for a in names:
        for b in edges[a]:
            if b not in reach(a, (a, b)):
                kept.add((targets[a].label, targets[b].label))
    return kept


def check_drawing(targets, faults):
    doc = os.path.join(ROOT, "docs", "architecture.md")
    with open(doc) as f:
        text = f.read()
    m = re.search(r"<!-- layout: targets -->\s*```mermaid\n(.*?)```", text, re.S)
    if not m:
        faults.append("docs/architecture.md: no mermaid block after <!-- layout: targets -->")
        return
    drawn = set()
    for a, b in re.findall(r"^\s*(\w+)(?:\[[^\]]*\])?\s*-->\s*(\w+)", m.group(1), re.M):
        drawn.add((a, b))
    want = drawn_graph(targets)
    built = {t.label for t in targets.values()}
    drawn = {(a, b) for a, b in drawn if not ({a, b} & (set(OPTIONAL) - built))}
    for a, b in sorted(want - drawn):
        faults.append(f"docs/architecture.md: the drawing lacks {a} --> {b}")
    for a, b in sorted(drawn - want):
        faults.append(f"docs/architecture.md: the drawing has {a} --> {b}, which CMake does not link "
                      "(or another path implies)")


def main():
    if len(sys.argv) != 2:
        print("usage: check-layout.py BUILD_DIR", file=sys.stderr)
        return 2
    targets = load(sys.argv[1])
    faults = []
    check_includes(targets, header_owners(targets), faults)
    check_links(targets, faults)
    check_drawing(targets, faults)
    for f in faults:
        print(f)
    checked = sum(1 for t in targets.values() if t.checked)
    print(f"check-layout: {checked} targets, {len(faults)} faults")
    return 1 if faults else 0


if __name__ == "__main__":
    sys.exit(main())
