#!/usr/bin/env python3
"""include_layers.py — the folder layering of src/, checked.

The folders of src/ form layers; a folder may use (include, or link against)
only its own folder and folders of lower layers. LAYERS below is the order,
bottom first; folders of one layer are independent of each other.

Two graphs are checked, folder to folder:
  includes  every `#include "path"` of src/**/*.{c,h}, resolved as the
            compiler does (the including file's folder first, then src/)
  links     (with --objects DIR, repeatable) every undefined symbol of an
            object file built from src/<folder>/x.c that is defined by an
            object of another folder (nm), i.e. a call or a data reference
            the linker resolves across folders
Each graph must be acyclic and point down the layer order. Every cycle
between folders and every upward edge is listed, with the files that make
it; the exit status is 1 when there is any, 0 otherwise.

  include_layers.py [--src DIR] [--objects DIR ...] [--layers SPEC]
SPEC overrides LAYERS: layers bottom first separated by '<', folders of a
layer by spaces; '.' is src/ itself ("'.' < io < cpu webgpu < ...").
--file-layers "FOLDER: a < b < c" (repeatable) overrides FILE_LAYERS: within
FOLDER, the objects of a.c, b.c, c.c may reference only symbols of files
before them in that order (with --objects).
"""
import argparse
import os
import re
import subprocess
import sys

# bottom first; "." is src/ itself
LAYERS = [
    ["."],               # base: tt (status), rng, config, pool, model init, lora, backend.h (the interface)
    ["io"],              # formats: json, fileio, safetensors, plot (know nothing of training)
    ["cpu", "webgpu", "tok"],  # the backends (independent of each other), the tokenizer
    ["engine"],          # over any backend: the constructor, inspection
    ["train"],           # the run: options, data, state, loop, checkpoint, HF export, peft
    ["cli", "web"],      # front-ends
]

# files of one folder that must call one way too (link level), bottom first:
# the WebGPU backend's planner, scheduler, recorder/runner and its driver
FILE_LAYERS = {
    "webgpu": ["plan", "schedule", "step", "profile", "backend"],
}

INCLUDE_RE = re.compile(r'^\s*#\s*include\s*"([^"]+)"', re.M)


def parse_layers(spec):
    return [layer.split() for layer in spec.split("<") if layer.strip()]


def folder_of(rel):
    d = os.path.dirname(rel)
    return d if d else "."


def source_files(src):
    for root, dirs, files in os.walk(src):
        dirs.sort()
        for f in sorted(files):
            if f.endswith((".c", ".h")):
                yield os.path.relpath(os.path.join(root, f), src)


def include_edges(src):
    """(from folder, to folder) -> sorted list of 'file -> included file'"""
    edges = {}
    bad = []
    for rel in source_files(src):
        with open(os.path.join(src, rel), encoding="utf-8", errors="replace") as fh:
            text = fh.read()
        for inc in INCLUDE_RE.findall(text):
            if ".." in inc.split("/"):
                bad.append(f"{rel}: #include \"{inc}\" climbs with '..' (name the folder from src/)")
                continue
            here = os.path.normpath(os.path.join(os.path.dirname(rel), inc))
            if os.path.isfile(os.path.join(src, here)):
                target = here
            elif os.path.isfile(os.path.join(src, inc)):
                target = os.path.normpath(inc)
            else:
                continue  # generated (build tree) or outside src/
            a, b = folder_of(rel), folder_of(target)
            if a != b:
                edges.setdefault((a, b), []).append(f"{rel} -> {target}")
    return edges, bad


def nm_symbols(objs):
    """object file -> (defined symbols, undefined symbols), one nm run"""
    out = subprocess.run(["nm", "-P", "-A"] + objs, check=True, capture_output=True, text=True).stdout
    syms = {o: (set(), set()) for o in objs}
    for line in out.splitlines():
        # "file.o: name type value size" (nm -A -P)
        path, sep, rest = line.rpartition(": ")
        parts = rest.split()
        if not sep or path not in syms or len(parts) < 2:
            continue
        name, kind = parts[0], parts[1]
        defined, undefined = syms[path]
        if kind == "U":
            undefined.add(name)
        elif kind.isupper():
            defined.add(name)
    return syms


def object_files(objdirs, src=None):
    """object file -> its source path relative to src/ (from CMake's
    <target>.dir/src/<folder>/<file>.c.o layout); with src, objects whose
    source no longer exists (left in a build folder by a moved file) are
    not part of the library and are skipped"""
    objs = {}
    for d in objdirs:
        for root, _, files in os.walk(d):
            for f in files:
                if not f.endswith((".o", ".obj")):
                    continue
                path = os.path.join(root, f)
                parts = os.path.relpath(path, d).split(os.sep)
                if "src" in parts:
                    i = len(parts) - 1 - parts[::-1].index("src")
                    rel = os.path.splitext("/".join(parts[i + 1:]))[0]  # src/ relative source
                    if src is not None and not os.path.exists(os.path.join(src, rel)):
                        continue
                    objs[path] = rel
    return objs


def link_edges(objdirs, src=None):
    objs = object_files(objdirs, src)
    if not objs:
        raise SystemExit(f"include_layers: no object files of src/ under {' '.join(objdirs)}")
    info = {}
    where = {}  # symbol -> folders defining it
    syms = nm_symbols(sorted(objs))
    for path, rel in sorted(objs.items()):
        defined, undefined = syms[path]
        info[path] = (rel, undefined)
        for s in defined:
            where.setdefault(s, set()).add(folder_of(rel))
    file_where = {}  # symbol -> files (src/ relative) defining it
    for path, rel in objs.items():
        for s in syms[path][0]:
            file_where.setdefault(s, set()).add(rel)
    edges, file_edges = {}, {}
    for path, (rel, undefined) in sorted(info.items()):
        a = folder_of(rel)
        for s in sorted(undefined):
            folders = where.get(s, set())
            if folders and a not in folders:
                for b in sorted(folders):
                    edges.setdefault((a, b), []).append(f"{rel} uses {s}")
            for other in sorted(file_where.get(s, ())):
                if other != rel and folder_of(other) == a:
                    file_edges.setdefault((rel, other), []).append(s)
    return edges, file_edges


def check_files(file_edges, file_layers, problems):
    """file edges inside a folder of file_layers must point to an earlier file"""
    for (a, b), syms in sorted(file_edges.items()):
        folder = folder_of(a)
        order = file_layers.get(folder)
        if not order:
            continue
        na, nb = (os.path.splitext(os.path.basename(x))[0] for x in (a, b))
        if na in order and nb in order and order.index(nb) >= order.index(na):
            problems.append(f"link: {a} -> {b} points to a later file of {folder}/ "
                            f"({' < '.join(order)}): {', '.join(syms[:4])}")


def cycles(edges):
    """strongly connected components with more than one folder (Tarjan)"""
    graph = {}
    for a, b in edges:
        graph.setdefault(a, set()).add(b)
        graph.setdefault(b, set())
    index, low, stack, on, out = {}, {}, [], set(), []
    counter = [0]

    def visit(v):
        index[v] = low[v] = counter[0]
        counter[0] += 1
        stack.append(v)
        on.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            comp = []
            while True:
                w = stack.pop()
                on.discard(w)
                comp.append(w)
                if w == v:
                    break
            if len(comp) > 1:
                out.append(sorted(comp))

    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def check(kind, edges, rank, problems):
    for comp in cycles(edges):
        problems.append(f"{kind} cycle between folders: {' <-> '.join(comp)}")
        for (a, b), why in sorted(edges.items()):
            if a in comp and b in comp:
                problems.append(f"  {a} -> {b}: {why[0]}" + (f" (+{len(why) - 1} more)" if len(why) > 1 else ""))
    for (a, b), why in sorted(edges.items()):
        for f in (a, b):
            if f not in rank:
                problems.append(f"{kind}: folder src/{f} is in no layer (add it to LAYERS in tests/tools/include_layers.py)")
        if a in rank and b in rank and rank[b] >= rank[a]:
            rel = "a folder of the same layer" if rank[b] == rank[a] else "a higher layer"
            problems.append(f"{kind}: {a} -> {b} points to {rel}")
            for w in why[:5]:
                problems.append(f"  {w}")
            if len(why) > 5:
                problems.append(f"  (+{len(why) - 5} more)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    here = os.path.dirname(os.path.abspath(__file__))
    ap.add_argument("--src", default=os.path.join(here, "..", "..", "src"))
    ap.add_argument("--objects", action="append", default=[], help="folder of CMake object files (ttcore_obj.dir)")
    ap.add_argument("--layers", help="layer order, bottom first: \". < io < cpu webgpu < ...\"")
    ap.add_argument("--file-layers", action="append", default=[], help="\"FOLDER: a < b < c\"")
    args = ap.parse_args()

    layers = parse_layers(args.layers) if args.layers else LAYERS
    file_layers = dict(FILE_LAYERS)
    for spec in args.file_layers:
        folder, _, order = spec.partition(":")
        file_layers[folder.strip()] = [f.strip() for f in order.split("<") if f.strip()]
    rank = {f: i for i, layer in enumerate(layers) for f in layer}
    src = os.path.abspath(args.src)
    problems = []

    folders = sorted({folder_of(r) for r in source_files(src)})
    for f in folders:
        if f not in rank:
            problems.append(f"folder src/{f} is in no layer (add it to LAYERS in tests/tools/include_layers.py)")

    inc, bad = include_edges(src)
    problems += bad
    check("include", inc, rank, problems)
    n_link = 0
    if args.objects:
        lk, fe = link_edges(args.objects, src)
        n_link = len(lk)
        check("link", lk, rank, problems)
        check_files(fe, file_layers, problems)

    order = " < ".join(" ".join(layer) for layer in layers)
    if args.objects:
        order += "".join(f"; {f}/: {' < '.join(o)}" for f, o in sorted(file_layers.items()))
    if problems:
        print("\n".join(problems))
        print(f"FAIL: src/ layering ({order}): {len(problems)} line(s) above")
        return 1
    print(f"ok: src/ layering {order}: {len(folders)} folders, {len(inc)} include edges"
          + (f", {n_link} link edges" if args.objects else "") + ", no cycle, every edge points down")
    return 0


if __name__ == "__main__":
    sys.exit(main())
