#!/usr/bin/env python3
"""wgsl_bounds.py - instrument the WGSL kernels for the bounds-check hook.

Usage: wgsl_bounds.py SRC_DIR OUT_DIR

Writes every SRC_DIR/*.wgsl to OUT_DIR, same names, same line numbers, with
two checks compiled in; run the result with TT_WEBGPU_WGSL_DIR=OUT_DIR
TT_WEBGPU_BOUNDS_CHECK=1 (test hooks, src/webgpu/hooks.h; a test build: the
device adds the counter buffer at @group(0) @binding(31) and prints
"bounds check: ..." when it closes). tests/webgpu/test_webgpu_bounds.sh runs it.

1. Array indices. Every index E of a known array NAME[E] becomes
   NAME[tt_bc_idx(u32(E), u32(LEN), ID)], which notes E >= LEN (slot ID)
   and returns min(E, LEN - 1): a bad index is reported and cannot touch
   memory outside the array, with or without Dawn's robustness transform.
   Known arrays: module-scope storage/uniform/workgroup/private arrays
   (LEN = arrayLength or the declared size),
   function-scope `var x: array<T, N>`, and vectors with an inferable type
   (a dynamic component index v[i] is checked against the width). Scopes
   follow the braces, so a local name shadows a module-scope one. A chained
   index on an array element (a4[i][c], vec4 elements) is checked too.
2. Workgroup memory written before it is read. Every workgroup variable
   (scalars become 1-element arrays) gets a bit mask per element lane in
   workgroup memory (1/32 of its size more), cleared by the entry point
   before anything else (its own barrier). A write NAME[E] = v (or a lane
   of it: NAME[E].x = v, NAME[E][c] = v) sets the lanes' bits; any other
   access (reads, compound assignments, &NAME[E] but atomicStore's) checks
   them and notes a missing bit at slot ID + 64 * 4096.
   workgroupUniformLoad(&NAME[E]) checks after its own barrier. Not
   caught: a statement that reads the element it assigns (x[i] = x[i] + 1:
   the index, evaluated first, marks it; write x[i] += 1), stale values
   from an earlier loop iteration, races.

The checks do not branch (a branch and an atomic per access made lavapipe
compile the kernels about 3x slower): each invocation keeps the largest slot it
noted per kind in a private variable, and the entry point, renamed
tt_bc_main (its lines unchanged), is called by a new one with the same
attributes that clears the masks first and counts those slots last
(tt_bc_flush): the counts are invocations, each at one violating site.
ID = file * 4096 + line: file is the 1-based position of the file in the
sorted listing (the "//!bounds_file N NAME" comment lines appended to
common.wgsl carry the table to the device), line its line in SRC_DIR.
common.wgsl also gets the counter binding and tt_bc_idx; everything is
appended at the end of the files, after any `enable` directive (an
`enable` would come with the prefix, before common.wgsl).
A "//!include NAME" file is instrumented on its own; the kernels that
include it (one or more such lines) know its declarations. Index sites on names that are neither
(e.g. a let-bound vector whose width cannot be inferred) or on struct
members are left alone and listed on stderr as unchecked (the test wants
none). Prints one summary line per file. Standard library only.
"""
import os
import re
import sys

MAX_FILES = 64
MAX_LINES = 4096
UNWRITTEN = MAX_FILES * MAX_LINES  # second half of the counters: kind 1


class Fail(Exception):
    pass


def mask_comments(text):
    """text with // and /* */ comments blanked (newlines kept): same length"""
    out = list(text)
    i, n = 0, len(text)
    while i < n:
        if text.startswith('//', i):
            j = text.find('\n', i)
            j = n if j < 0 else j
            for k in range(i, j):
                out[k] = ' '
            i = j
        elif text.startswith('/*', i):
            depth, j = 1, i + 2
            while j < n and depth:
                if text.startswith('/*', j):
                    depth, j = depth + 1, j + 2
                elif text.startswith('*/', j):
                    depth, j = depth - 1, j + 2
                else:
                    j += 1
            for k in range(i, j):
                if out[k] != '\n':
                    out[k] = ' '
            i = j
        else:
            i += 1
    return ''.join(out)


def match_close(m, i, open_ch, close_ch):
    """m[i] == open_ch: index just past its matching close_ch"""
    depth = 0
    n = len(m)
    while i < n:
        c = m[i]
        if c == open_ch:
            depth += 1
        elif c == close_ch:
            depth -= 1
            if depth == 0:
                return i + 1
        i += 1
    raise Fail('unbalanced %s' % open_ch)


def type_end(m, i):
    """end of a type expression starting at i (stops at , ; ) = { outside <>)"""
    depth = 0
    n = len(m)
    while i < n:
        c = m[i]
        if c == '<':
            depth += 1
        elif c == '>':
            depth -= 1
        elif depth == 0 and c in ',;)={':
            return i
        i += 1
    return i


def split_array(ty):
    """'array<T, N>' -> (T, N or None), else None"""
    ty = ty.strip()
    if not (ty.startswith('array<') and ty.endswith('>')):
        return None
    inner = ty[6:-1]
    depth = 0
    for k, c in enumerate(inner):
        if c == '<':
            depth += 1
        elif c == '>':
            depth -= 1
        elif c == ',' and depth == 0:
            return inner[:k].strip(), inner[k + 1:].strip().rstrip(',').strip() or None
    return inner.strip(), None


VEC_RE = re.compile(r'^vec([234])(?:<[^>]*>|[fhiu])?$')


def lanes_of(ty):
    mv = VEC_RE.match(ty.strip())
    return int(mv.group(1)) if mv else 1


class Info:
    """what a name denotes: kind 'array' (length expr, element type),
    'vector' (width), or 'other' (shadows)"""

    def __init__(self, kind, length=None, elem=None, space=None, name=None):
        self.kind, self.length, self.elem, self.space, self.name = kind, length, elem, space, name
        self.uload = False  # read through workgroupUniformLoad somewhere

    @property
    def wg(self):
        return self.kind == 'array' and self.space == 'workgroup'


def decl_info(name, space, ty, init):
    if ty is not None:
        arr = split_array(ty)
        if arr:
            elem, size = arr
            length = size if size else 'arrayLength(&%s)' % name
            return Info('array', '(%s)' % length, elem, space, name)
        if VEC_RE.match(ty.strip()):
            return Info('vector', str(lanes_of(ty)))
        return Info('other')
    if init is not None:
        mi = re.match(r'\s*(vec[234])(?:<[^>(]*>|[fhiu])?\s*\(', init)
        if mi:
            return Info('vector', mi.group(1)[3])
        mi = re.match(r'\s*array<(.*)>\s*\(', init)
        if mi:
            arr = split_array('array<%s>' % mi.group(1))
            if arr and arr[1]:
                return Info('array', '(%s)' % arr[1], arr[0], 'function', name)
    return Info('other')


SWZ = {'x': 0, 'y': 1, 'z': 2, 'w': 3, 'r': 0, 'g': 1, 'b': 2, 'a': 3}
COMPOUND = ('+=', '-=', '*=', '/=', '%=', '&=', '|=', '^=', '<<=', '>>=', '++', '--')


class Instrumenter:
    def __init__(self, text, fidx, fname, pre):
        self.orig = text
        self.fidx = fidx
        self.fname = fname
        self.pre = pre  # module-scope decls of the //!include file: name -> Info
        self.line_at = []
        self.sites = 0
        self.wg_sites = 0
        self.unchecked = []
        self.wg_used = {}  # name -> Info (workgroup arrays this file declares)

    # ---- scalar workgroup variables become 1-element arrays
    def arrays_for_wg_scalars(self):
        m = mask_comments(self.orig)
        scal = []
        for d in re.finditer(r'\bvar\s*<\s*workgroup\s*>\s*(\w+)\s*:\s*', m):
            te = type_end(m, d.end())
            ty = m[d.end():te].strip()
            if not ty.startswith('array<'):
                scal.append((d.group(1), d.end(), te))
        if not scal:
            return
        text = self.orig
        edits = []
        for name, ts, te in scal:
            if re.search(r'\b(let|var|const)\s+%s\b|\b%s\s*:' % (name, name), m[te:]):
                raise Fail('%s: workgroup variable %s is shadowed (not supported)' % (self.fname, name))
            edits.append((ts, te, 'array<%s, 1>' % text[ts:te].strip()))
            decl_name = m.rfind(name, 0, ts)
            for u in re.finditer(r'(?<![\w.])%s\b' % re.escape(name), m):
                if u.start() == decl_name:
                    continue
                edits.append((u.end(), u.end(), '[0u]'))
        for s, e, r in sorted(edits, reverse=True):
            text = text[:s] + r + text[e:]
        self.orig = text

    def run(self):
        self.arrays_for_wg_scalars()
        t = self.orig
        self.m = mask_comments(t)
        ln = 1
        for ch in t:
            self.line_at.append(ln)
            if ch == '\n':
                ln += 1
        self.line_at.append(ln)
        if ln >= MAX_LINES:
            raise Fail('%s has %d lines (the counters hold %d per file)' % (self.fname, ln, MAX_LINES))
        self.scopes = [dict(self.pre)]
        self.pending = None
        body = self.scan(0, len(t), top=True)
        return body

    def lookup(self, name):
        for sc in reversed(self.scopes):
            if name in sc:
                return sc[name]
        return None

    def ident_id(self, pos):
        return self.fidx * MAX_LINES + self.line_at[pos]

    # ---- the main scan: braces, declarations, index sites
    TOKEN = re.compile(r'[{}]|[A-Za-z_]\w*')

    def scan(self, lo, hi, top=False):
        m, t = self.m, self.orig
        out = []
        i = lo
        while i < hi:
            tk = self.TOKEN.search(m, i, hi)
            if not tk:
                out.append(t[i:hi])
                break
            out.append(t[i:tk.start()])
            w = tk.group(0)
            if w == '{':
                if not top:
                    raise Fail('brace inside an index expression')
                sc = {}
                if self.pending:
                    sc.update(self.pending)
                    self.pending = None
                self.scopes.append(sc)
                out.append('{')
                i = tk.end()
            elif w == '}':
                if not top:
                    raise Fail('brace inside an index expression')
                self.scopes.pop()
                out.append('}')
                i = tk.end()
            elif w in ('var', 'let', 'const', 'override') and (tk.start() == 0 or m[tk.start() - 1] != '.'):
                self.declaration(tk)
                out.append(w)
                i = tk.end()
            elif w == 'fn':
                self.function_params(tk)
                out.append(w)
                i = tk.end()
            elif w == 'struct':
                j = m.index('{', tk.end())
                k = match_close(m, j, '{', '}')
                out.append(t[tk.start():k])
                i = k
            else:
                j = tk.end()
                while j < hi and m[j] in ' \t\r\n':
                    j += 1
                prev = tk.start() - 1
                while prev >= 0 and m[prev] in ' \t\r\n':
                    prev -= 1
                if j < hi and m[j] == '[' and not (prev >= 0 and m[prev] == '.'):
                    rep, k = self.site(tk, j)
                    out.append(rep)
                    i = k
                elif j < hi and m[j] == '[':  # a member's array: not checked, listed
                    self.unchecked.append('%s line %d: .%s[...]' % (self.fname, self.line_at[tk.start()], w))
                    out.append(w)
                    i = tk.end()
                else:
                    out.append(w)
                    i = tk.end()
        return ''.join(out)

    def declaration(self, tk):
        m = self.m
        d = re.compile(r'(var|let|const|override)\s*(?:<\s*([\w\s,]*)>)?\s*(\w+)\s*(:)?\s*').match(m, tk.start())
        if not d:
            raise Fail('cannot parse the declaration at line %d' % self.line_at[tk.start()])
        space = (d.group(2) or '').split(',')[0].strip() or ('private' if len(self.scopes) == 1 else 'function')
        name = d.group(3)
        ty = init = None
        k = d.end()
        if d.group(4):
            te = type_end(m, k)
            ty = m[k:te]
            k = te
        e = re.compile(r'\s*=\s*').match(m, k)
        if e:
            init = m[e.end():e.end() + 200]
        info = decl_info(name, space, ty, init)
        if info.kind == 'other' and ty is None and e:
            info = self.infer_vector(e.end()) or info
        self.scopes[-1][name] = info

    def infer_vector(self, pos):
        """the width of `let x = EXPR;` from EXPR's vector operands: bare
        known vectors, vecN(...) constructors, elements of vecN arrays; one
        width among them, else None (heuristic: a call returning another
        width would fool it)"""
        m = self.m
        end = pos
        depth = 0
        while end < len(m) and not (depth == 0 and m[end] in ';{'):
            depth += m[end] in '([' and 1 or m[end] in ')]' and -1 or 0
            end += 1
        widths = set()
        for w in re.finditer(r'(?<![\w.])([A-Za-z_]\w*)\s*(\S?)', m[pos:end]):
            name, nxt = w.group(1), w.group(2)
            mv = re.match(r'vec([234])', name)
            if mv and name in ('vec2', 'vec3', 'vec4', 'vec2f', 'vec3f', 'vec4f', 'vec2u', 'vec3u', 'vec4u',
                               'vec2i', 'vec3i', 'vec4i'):
                widths.add(int(mv.group(1)))
                continue
            info = self.lookup(name)
            if info is None or nxt in ('(', '.'):
                continue
            if info.kind == 'vector' and nxt != '[':
                widths.add(int(info.length))
            elif info.kind == 'array' and nxt == '[':
                q = pos + w.end(2) - 1
                q2 = match_close(m, q, '[', ']')
                if not re.match(r'\s*[.\[]', m[q2:q2 + 8]) and lanes_of(info.elem) > 1:
                    widths.add(lanes_of(info.elem))
        if len(widths) == 1:
            return Info('vector', str(widths.pop()))
        return None

    def function_params(self, tk):
        m = self.m
        f = re.compile(r'fn\s+\w+\s*\(').match(m, tk.start())
        if not f:
            return
        close = match_close(m, f.end() - 1, '(', ')')
        params = {}
        for p in re.finditer(r'(\w+)\s*:\s*', m[f.end():close - 1]):
            te = type_end(m[f.end():close - 1] + ',', p.end())
            params[p.group(1)] = decl_info(p.group(1), 'function', m[f.end():close - 1][p.end():te], None)
        self.pending = params

    # ---- one index site NAME[...] (j: the '[')
    def site(self, tk, j):
        m, t = self.m, self.orig
        name = tk.group(0)
        info = self.lookup(name)
        k = match_close(m, j, '[', ']')
        inner = self.scan(j + 1, k - 1)
        if info is None or info.kind == 'other':
            self.unchecked.append('%s line %d: %s[...]' % (self.fname, self.line_at[tk.start()], name))
            return name + t[tk.end():j] + '[' + inner + ']', k
        ident = self.ident_id(tk.start())
        self.sites += 1
        if info.kind == 'vector':
            return '%s%s[tt_bc_idx(u32(%s), %su, %du)]' % (name, t[tk.end():j], inner, info.length, ident), k
        # a chained index on the element: [C] (vector lane / inner array)
        chain = None
        q = k
        while q < len(m) and m[q] in ' \t':
            q += 1
        if q < len(m) and m[q] == '[':
            q2 = match_close(m, q, '[', ']')
            chain = (self.scan(q + 1, q2 - 1), q2)
        elem_lanes = lanes_of(info.elem)
        inner_arr = split_array(info.elem)
        if not info.wg:
            rep = '%s[tt_bc_idx(u32(%s), u32%s, %du)]' % (name, inner, info.length, ident)
            if chain is not None:
                if inner_arr and inner_arr[1]:
                    clen = 'u32(%s)' % inner_arr[1]
                elif elem_lanes > 1:
                    clen = '%du' % elem_lanes
                else:
                    clen = None
                if clen:
                    self.sites += 1
                    rep += '[tt_bc_idx(u32(%s), %s, %du)]' % (chain[0], clen, ident)
                else:
                    rep += '[' + chain[0] + ']'
                k = chain[1]
            return rep, k
        # workgroup array: which lanes, read or write
        self.wg_sites += 1
        self.wg_used[name] = info
        full = (1 << elem_lanes) - 1
        after = chain[1] if chain is not None else k
        if chain is not None and elem_lanes > 1:
            lane_mask = '(1u << min(u32(%s), %du))' % (chain[0], elem_lanes - 1)
        else:
            sw = re.compile(r'\s*\.\s*([xyzwrgba]{1,4})\b').match(m, after)
            if sw and elem_lanes > 1:
                bits = 0
                for ch in sw.group(1):
                    bits |= 1 << SWZ[ch]
                lane_mask = '%du' % (bits & full)
            else:
                lane_mask = '%du' % full
        # what follows the access (past any swizzle / member)
        r = re.compile(r'(\s*\.\s*\w+)*\s*').match(m, after).end()
        before = tk.start() - 1
        while before >= 0 and m[before] in ' \t\r\n':
            before -= 1
        amp = before >= 0 and m[before] == '&' and (before == 0 or m[before - 1] != '&')
        is_write = m.startswith('=', r) and not m.startswith('==', r) and not amp
        uload = False
        if amp:
            b2 = before - 1
            while b2 >= 0 and m[b2] in ' \t\r\n':
                b2 -= 1
            uload = m[b2] == '(' and m[:b2].rstrip().endswith('workgroupUniformLoad')
            # atomicStore(&NAME[E], v) writes; every other atomic reads first
            is_write = m[b2] == '(' and re.search(r'\batomicStore\s*$', m[:b2]) is not None
        if uload:
            # workgroupUniformLoad(&NAME[E]) -> tt_bcu_NAME(E, ID): checked after its barrier
            start = m[:b2].rstrip().rfind('workgroupUniformLoad')
            close = match_close(m, b2, '(', ')')
            if m[k:close - 1].strip():
                raise Fail('%s line %d: workgroupUniformLoad(&%s[...]) with more after the index' %
                           (self.fname, self.line_at[tk.start()], name))
            info.uload = True
            return ('\x00UL%d\x00tt_bcu_%s(u32(%s), %du)' % (start, name, inner, ident)), close
        fn = 'tt_bcw_' if is_write else 'tt_bcr_'
        rep = '%s[%s%s(u32(%s), %s, %du)]' % (name, fn, name, inner, lane_mask, ident)
        if chain is not None:
            if elem_lanes > 1:
                rep += '[tt_bc_idx(u32(%s), %du, %du)]' % (chain[0], elem_lanes, ident)
                self.sites += 1
            else:
                rep += '[' + chain[0] + ']'
            k = chain[1]
        return rep, k


def fix_uloads(text):
    """a workgroupUniformLoad rewrite replaces text already emitted before it
    (the call's name and '(&'): cut back to the marker's start"""
    while '\x00UL' in text:
        a = text.index('\x00UL')
        b = text.index('\x00', a + 1)
        # the emitted text ends with "workgroupUniformLoad ( &" + possibly spaces
        head = text[:a]
        cut = head.rstrip()
        assert cut.endswith('&')
        cut = cut[:-1].rstrip()
        assert cut.endswith('(')
        cut = cut[:-1].rstrip()
        assert cut.endswith('workgroupUniformLoad')
        cut = cut[:-len('workgroupUniformLoad')]
        text = cut + text[b + 1:]
    return text


def wg_helpers(info):
    name, n = info.name, info.length
    lanes = lanes_of(info.elem)
    stride = 1 if lanes == 1 else 2 if lanes == 2 else 4
    words = '((%s * %du + 31u) / 32u)' % (n, stride)
    s = ['',
         '// bounds check (tests/tools/wgsl_bounds.py): lanes of %s written' % name,
         'var<workgroup> tt_bcm_%s: array<atomic<u32>, %s>;' % (name, words),
         'fn tt_bcw_%s(i: u32, m: u32, id: u32) -> u32 {' % name,
         '    let j = tt_bc_idx(i, u32%s, id);' % n,
         '    atomicOr(&tt_bcm_%s[(j * %du) >> 5u], m << ((j * %du) & 31u));' % (name, stride, stride),
         '    return j;',
         '}',
         'fn tt_bcr_%s(i: u32, m: u32, id: u32) -> u32 {' % name,
         '    let j = tt_bc_idx(i, u32%s, id);' % n,
         '    let w = (atomicLoad(&tt_bcm_%s[(j * %du) >> 5u]) >> ((j * %du) & 31u)) & m;' % (name, stride, stride),
         '    tt_bc_badw = max(tt_bc_badw, select(0u, %du + id, w != m));' % UNWRITTEN,
         '    return j;',
         '}']
    if info.uload:
        s += ['fn tt_bcu_%s(i: u32, id: u32) -> %s {' % (name, info.elem),
              '    let j = tt_bc_idx(i, u32%s, id);' % n,
              '    let v = workgroupUniformLoad(&%s[j]);' % name,
              '    _ = tt_bcr_%s(j, %du, id);' % (name, (1 << lanes) - 1),
              '    return v;',
              '}']
    return s, words


def entry_wrapper(text, wg_infos, fname):
    """the entry point becomes tt_bc_main (same lines, attributes blanked);
    a new main with its attributes and parameters clears the workgroup
    masks, calls it and flushes this invocation's findings"""
    m = mask_comments(text)
    c = re.search(r'@compute\b', m)
    e = re.search(r'@workgroup_size\s*\(', m)
    if not c or not e or len(re.findall(r'@compute\b', m)) != 1:
        raise Fail('%s: want exactly one @compute entry point with @workgroup_size' % fname)
    close = match_close(m, e.end() - 1, '(', ')')
    dims = [d.strip() for d in m[e.end():close - 1].split(',') if d.strip()]
    nt = ' * '.join('u32(%s)' % d for d in dims)
    f = re.compile(r'\s*fn\s+(\w+)\s*\(').match(m, max(close, c.end()))
    if not f:
        raise Fail('%s: the entry point must follow @compute @workgroup_size(...)' % fname)
    pclose = match_close(m, f.end() - 1, '(', ')')
    params = text[f.end():pclose - 1]
    # the parameters: names (for the call) and the list without attributes
    mp = m[f.end():pclose - 1]
    names = []
    plain = list(params)
    for at in re.finditer(r'@\w+\s*(\([^)]*\))?', mp):
        for k in range(at.start(), at.end()):
            if plain[k] != '\n':
                plain[k] = ' '
    for pn in re.finditer(r'(\w+)\s*:', ''.join(plain)):
        names.append(pn.group(1))
    lm = re.search(r'@builtin\s*\(\s*local_invocation_index\s*\)\s*(\w+)', mp)
    new_params = params.strip()
    if lm:
        lid = lm.group(1)
    else:
        lid = 'tt_bc_lid'
        new_params += (', ' if new_params else '') + '@builtin(local_invocation_index) tt_bc_lid: u32'
    attrs = ' '.join([m[c.start():c.end()], m[e.start():close]])
    body = ['', '// bounds check (tests/tools/wgsl_bounds.py): the entry point, around the kernel\'s',
            attrs, 'fn %s(%s) {' % (f.group(1), new_params)]
    for info, words in wg_infos:
        body.append('    for (var tt_bc_i = %s; tt_bc_i < %s; tt_bc_i += %s) { atomicStore(&tt_bcm_%s[tt_bc_i], 0u); }'
                    % (lid, words, nt, info.name))
    if wg_infos:
        body.append('    workgroupBarrier();')
    body += ['    tt_bc_main(%s);' % ', '.join(names), '    tt_bc_flush();', '}']
    # blank the attributes, rename, drop the parameters' attributes: same lines
    out = list(text)
    for lo, hi in ((c.start(), c.end()), (e.start(), close)):
        for k in range(lo, hi):
            if out[k] != '\n':
                out[k] = ' '
    out[f.end():pclose - 1] = plain
    head = ''.join(out)
    nm = re.compile(r'(\s*fn\s+)(\w+)').match(head, max(close, c.end()))
    head = head[:nm.start(2)] + 'tt_bc_main' + head[nm.end(2):]
    return head, body


def decls_of(text):
    """module-scope declarations of an include file: name -> Info"""
    ins = Instrumenter(text, 0, '', {})
    ins.run()
    return dict(ins.scopes[0]) if ins.scopes else {}


COMMON_TAIL = '''
// ---- bounds check (tests/tools/wgsl_bounds.py; the device: src/webgpu/device_dawn.c)
@group(0) @binding(31) var<storage, read_write> tt_bc_count: array<atomic<u32>>;
// this invocation's findings: the largest slot of each kind (0: none), no
// branches in the kernel; the entry point's wrapper counts them at the end
var<private> tt_bc_bad: u32;
var<private> tt_bc_badw: u32;
// index i of an array of n elements: noted if out of range, then clamped
fn tt_bc_idx(i: u32, n: u32, id: u32) -> u32 {
    tt_bc_bad = max(tt_bc_bad, select(0u, id, i >= n));
    return min(i, n - 1u);
}
fn tt_bc_flush() {
    if (tt_bc_bad != 0u) { atomicAdd(&tt_bc_count[tt_bc_bad], 1u); }
    if (tt_bc_badw != 0u) { atomicAdd(&tt_bc_count[tt_bc_badw], 1u); }
}
'''


def main(argv):
    if len(argv) != 3:
        sys.stderr.write('usage: wgsl_bounds.py SRC_DIR OUT_DIR\n')
        return 2
    src, dst = argv[1], argv[2]
    files = sorted(f for f in os.listdir(src) if f.endswith('.wgsl'))
    if not files or 'common.wgsl' not in files:
        sys.stderr.write('wgsl_bounds: no common.wgsl in %s\n' % src)
        return 1
    if len(files) >= MAX_FILES:
        sys.stderr.write('wgsl_bounds: %d files (the counters hold %d)\n' % (len(files), MAX_FILES - 1))
        return 1
    os.makedirs(dst, exist_ok=True)
    fidx = {f: i + 1 for i, f in enumerate(files)}
    texts = {f: open(os.path.join(src, f), encoding='utf-8').read() for f in files}
    unchecked = []
    total = 0
    try:
        for f in files:
            text = texts[f]
            pre = {}
            for inc in re.finditer(r'^//!include (\w+)', text, re.M):
                iname = inc.group(1) + '.wgsl'
                if iname not in texts:
                    raise Fail('%s includes %s, which is not in %s' % (f, iname, src))
                pre.update(decls_of(texts[iname]))
            inc_wg = [v for v in pre.values() if v.wg]
            ins = Instrumenter(text, fidx[f], f, pre)
            out = fix_uloads(ins.run())
            tail = []
            wg_infos = []
            for name, info in sorted(ins.wg_used.items()):
                if name in pre:
                    continue  # the include file's own helpers
                h, words = wg_helpers(info)
                tail += h
                wg_infos.append((info, words))
            # every workgroup variable this file declares gets its mask (even unused)
            for v in ins.scopes[0].values():
                if v.wg and v.name not in ins.wg_used and v.name not in pre:
                    h, words = wg_helpers(v)
                    tail += h
                    wg_infos.append((v, words))
            for v in inc_wg:
                wg_infos.append((v, '((%s * %du + 31u) / 32u)' % (v.length, {1: 1, 2: 2}.get(lanes_of(v.elem), 4))))
            if re.search(r'@compute', mask_comments(out)):
                out, wrapper = entry_wrapper(out, wg_infos, f)
                tail += wrapper
            if f == 'common.wgsl':
                tail.append(COMMON_TAIL)
                tail += ['//!bounds_file %d %s' % (fidx[g], g) for g in files]
            if tail:
                out = out.rstrip('\n') + '\n' + '\n'.join(tail) + '\n'
            with open(os.path.join(dst, f), 'w', encoding='utf-8') as fo:
                fo.write(out)
            total += ins.sites
            unchecked += ins.unchecked
            print('wgsl_bounds: %-22s #%-2d %4d index sites checked, %3d workgroup accesses, %d unchecked' %
                  (f, fidx[f], ins.sites, ins.wg_sites, len(ins.unchecked)))
    except Fail as e:
        sys.stderr.write('wgsl_bounds: %s\n' % e)
        return 1
    for u in unchecked:
        sys.stderr.write('wgsl_bounds: unchecked (not a known array or vector; give it an explicit type): %s\n' % u)
    print('wgsl_bounds: %d files, %d index sites checked, %d unchecked' % (len(files), total, len(unchecked)))
    return 0


if __name__ == '__main__':
    sys.exit(main(sys.argv))
