#!/usr/bin/env bash
# Checks the kpack'd (HIPK) install trees of tests/fixtures/hipk_fixtures.sh
# against their original images, independently of libcoload and of
# kpack_split's own code: sections and segments from llvm-readelf, code
# objects from clang-offload-bundler, zstd frames from the zstd tool, the
# msgpack of the marker and the archive TOCs from a small reader here.
#
#   hipk_images_test.sh HIPK_DIR HIPK_RECORD [READELF] [BUNDLER]
#
# For every case of HIPK_DIR/cases.tsv and both schemes:
#   * llvm-readelf -lSW: .rocm_kpack_ref is SHF_ALLOC and inside a PT_LOAD that
#     also holds the program header table (PT_PHDR), .hip_fatbin is NOBITS
#     with its old file bytes zeroed, the ELF header's e_phoff at that table;
#   * every wrapper of .hipFatBinSegment: magic HIPK, version and reserved1's
#     high half as before, reserved1's low half = its index, pointer field 0;
#     ET_DYN: its R_X86_64_RELATIVE addend (llvm-readelf -r) = the marker's
#     address; ET_EXEC: no relocation (the packer's defect, kept);
#   * the marker decodes to {"kpack_search_paths": ["<../>.kpack/<prefix>_@GFXARCH@.kpack"],
#     "kernel_name": "<prefix>/<relpath>"} (in that key order);
#   * one archive per target; every bundle of the original .hip_fatbin
#     unbundled by clang-offload-bundler, numbered per target in bundle order,
#     gives exactly the archive's keys, byte-identical code objects,
#     metadata.target = the entry ID, gfx_arches = [target];
#   * shared libraries: dlopen'ed by HIPK_RECORD, every registered wrapper
#     has magic HIPK, reserved1 = its index and a pointer to the marker bytes,
#     and the kernels registered are the original's; executables run (exit 0),
#     and those linked against the recording HIP library (mixed_targets_*)
#     report the same at exit, a non-PIE one null pointers (the packer's defect).
# Prints "all checks passed" at the end; exit 1 on the first failure.
set -euo pipefail
if [[ $# -lt 2 || $# -gt 4 ]]; then
  echo "usage: $0 HIPK_DIR HIPK_RECORD [READELF] [BUNDLER]" >&2
  exit 2
fi
export HIPK_DIR=$1 HIPK_RECORD=$2 READELF=${3:-llvm-readelf-22} BUNDLER=${4:-clang-offload-bundler-22}
exec python3 - <<'EOF'
import os, re, struct, subprocess, sys, tempfile

D = os.environ["HIPK_DIR"]
RECORD = os.environ["HIPK_RECORD"]
READELF = os.environ["READELF"]
BUNDLER = os.environ["BUNDLER"]
HIPF, HIPK = 0x48495046, 0x4B504948
checks = 0


def fail(msg):
    print("FAILED: " + msg)
    sys.exit(1)


def check(cond, msg):
    global checks
    checks += 1
    if not cond:
        fail(msg)


def run(*args, **kw):
    return subprocess.run(args, check=True, capture_output=True, **kw).stdout


# --- msgpack, just what the marker and the TOC use -------------------------
def unpack(b, i=0):
    t = b[i]
    if t <= 0x7F: return t, i + 1
    if 0x80 <= t <= 0x8F: return unpack_map(b, i + 1, t & 0x0F)
    if 0x90 <= t <= 0x9F: return unpack_array(b, i + 1, t & 0x0F)
    if 0xA0 <= t <= 0xBF: n = t & 0x1F; return b[i + 1:i + 1 + n].decode(), i + 1 + n
    if t == 0xC0: return None, i + 1
    if t in (0xC2, 0xC3): return t == 0xC3, i + 1
    if t in (0xC4, 0xC5, 0xC6):
        w = {0xC4: 1, 0xC5: 2, 0xC6: 4}[t]; n = int.from_bytes(b[i + 1:i + 1 + w], "big")
        return bytes(b[i + 1 + w:i + 1 + w + n]), i + 1 + w + n
    if t in (0xCC, 0xCD, 0xCE, 0xCF):
        w = {0xCC: 1, 0xCD: 2, 0xCE: 4, 0xCF: 8}[t]
        return int.from_bytes(b[i + 1:i + 1 + w], "big"), i + 1 + w
    if t in (0xD9, 0xDA, 0xDB):
        w = {0xD9: 1, 0xDA: 2, 0xDB: 4}[t]; n = int.from_bytes(b[i + 1:i + 1 + w], "big")
        return b[i + 1 + w:i + 1 + w + n].decode(), i + 1 + w + n
    if t in (0xDC, 0xDD):
        w = 2 if t == 0xDC else 4
        return unpack_array(b, i + 1 + w, int.from_bytes(b[i + 1:i + 1 + w], "big"))
    if t in (0xDE, 0xDF):
        w = 2 if t == 0xDE else 4
        return unpack_map(b, i + 1 + w, int.from_bytes(b[i + 1:i + 1 + w], "big"))
    fail("msgpack tag 0x%02x not handled" % t)


def unpack_array(b, i, n):
    out = []
    for _ in range(n):
        v, i = unpack(b, i); out.append(v)
    return out, i


def unpack_map(b, i, n):
    out = {}
    for _ in range(n):
        k, i = unpack(b, i); v, i = unpack(b, i)
        if k in out: fail("duplicate msgpack key %r" % k)
        out[k] = v
    return out, i


def unpack_all(b):
    v, end = unpack(b, 0)
    check(end == len(b), "msgpack document ends at %d of %d bytes" % (end, len(b)))
    return v


# --- ELF views through llvm-readelf --------------------------------------------
def sections(path):
    out = {}
    for line in run(READELF, "-SW", path).decode().splitlines():
        m = re.match(r"\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+([0-9a-f]+)\s+[0-9a-f]+\s+(\S*)", line)
        if m and m.group(2) != "NULL":
            out[m.group(2)] = dict(type=m.group(3), addr=int(m.group(4), 16), off=int(m.group(5), 16),
                                   size=int(m.group(6), 16), flags=m.group(7))
    return out


def segments(path):
    out = []
    for line in run(READELF, "-lW", path).decode().splitlines():
        m = re.match(r"\s*([A-Z_]+)\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)\s+0x[0-9a-f]+\s+0x([0-9a-f]+)\s+0x([0-9a-f]+)", line)
        if m:
            out.append(dict(type=m.group(1), off=int(m.group(2), 16), vaddr=int(m.group(3), 16),
                            filesz=int(m.group(4), 16), memsz=int(m.group(5), 16)))
    return out


def relocations(path):
    out = {}
    for line in run(READELF, "-rW", path).decode().splitlines():
        m = re.match(r"\s*([0-9a-f]{16})\s+[0-9a-f]+\s+(R_X86_64_\w+)\s+(.*)$", line)
        if m:
            off = int(m.group(1), 16)
            add = re.search(r"([0-9a-f]+)\s*$", m.group(3))
            out.setdefault(off, []).append((m.group(2), int(add.group(1), 16) if add else None))
    return out


def split_bundles(fatbin):
    """The bundles of a .hip_fatbin, by their headers (plain: the end of the last entry;
    CCOB v2/v3: the total size), zero padding skipped."""
    out, at = [], 0
    while at < len(fatbin):
        if fatbin[at:at + 24] == b"__CLANG_OFFLOAD_BUNDLE__":
            n = struct.unpack_from("<Q", fatbin, at + 24)[0]
            p, end = at + 32, at + 32
            for _ in range(n):
                off, size, idl = struct.unpack_from("<QQQ", fatbin, p)
                p += 24 + idl
                end = max(end, p, at + off + size)
            out.append(fatbin[at:end]); at = end
        elif fatbin[at:at + 4] == b"CCOB":
            ver = struct.unpack_from("<H", fatbin, at + 4)[0]
            check(ver in (2, 3), "CCOB version %d in a host fixture" % ver)
            total = struct.unpack_from("<I" if ver == 2 else "<Q", fatbin, at + 8)[0]
            out.append(fatbin[at:at + total]); at += total
        else:
            check(fatbin[at] == 0, "byte 0x%02x between bundles at %d" % (fatbin[at], at))
            at += 1
    return out


def unbundle(bundle, tmp):
    """[(entry ID, bytes)] of one bundle, by clang-offload-bundler-22."""
    path = os.path.join(tmp, "bundle")
    with open(path, "wb") as f: f.write(bundle)
    ids = [i for i in run(BUNDLER, "-list", "-type=o", "-input=" + path).decode().split() if not i.startswith("host-")]
    outs = [os.path.join(tmp, "e%d" % k) for k in range(len(ids))]
    run(BUNDLER, "-unbundle", "-type=o", "-targets=" + ",".join(ids), "-input=" + path, *["-output=" + o for o in outs])
    entries = []
    for i, o in zip(ids, outs):
        with open(o, "rb") as f: entries.append((i, f.read()))
    return entries


def read_archive(path):
    with open(path, "rb") as f: a = f.read()
    check(a[:4] == b"KPAK", path + ": magic")
    version, toc_offset = struct.unpack_from("<IQ", a, 4)
    check(version == 1 and a[16:64] == bytes(48), path + ": version 1, zero padding to 64")
    toc = unpack_all(a[toc_offset:])
    scheme = toc["compression_scheme"]
    objects = []
    if scheme == "none":
        for blob in toc["blobs"]: objects.append(a[blob["offset"]:blob["offset"] + blob["size"]])
    else:
        check(scheme == "zstd-per-kernel" and toc["zstd_offset"] == 64, path + ": scheme")
        at = toc["zstd_offset"]
        count = struct.unpack_from("<I", a, at)[0]; at += 4
        for _ in range(count):
            size = struct.unpack_from("<I", a, at)[0]
            objects.append(run("zstd", "-d", "-c", "-q", input=a[at + 4:at + 4 + size])); at += 4 + size
        check(at == toc["zstd_offset"] + toc["zstd_size"], path + ": zstd_size")
    return toc, objects


unbundled = {}  # case -> the bundler's entries of its original, per target


def check_image(scheme, case, prefix, relpath, original):
    """Checks one packed image of a tree; returns what the archives must hold for it."""
    tree = os.path.join(D, scheme, case)
    img, orig = os.path.join(tree, relpath), os.path.join(D, original)
    what = "%s/%s/%s" % (scheme, case, relpath)
    with open(img, "rb") as f: data = f.read()
    with open(orig, "rb") as f: odata = f.read()
    s, os_ = sections(img), sections(orig)
    ref, fb, seg = s.get(".rocm_kpack_ref"), s[".hip_fatbin"], s[".hipFatBinSegment"]
    check(ref is not None and ref["type"] == "PROGBITS" and "A" in ref["flags"], what + ": .rocm_kpack_ref PROGBITS, SHF_ALLOC")
    check(fb["type"] == "NOBITS" and fb["size"] == os_[".hip_fatbin"]["size"], what + ": .hip_fatbin NOBITS, same size")
    check(data[fb["off"]:fb["off"] + fb["size"]] == bytes(fb["size"]), what + ": .hip_fatbin's file bytes zeroed")
    check(os.path.getsize(img) > os.path.getsize(orig), what + ": nothing dropped from the file")
    segs = segments(img)
    loads = [p for p in segs if p["type"] == "LOAD"]
    check(len(loads) == len([p for p in segments(orig) if p["type"] == "LOAD"]) + 1, what + ": one PT_LOAD more")
    holder = [p for p in loads if p["vaddr"] <= ref["addr"] and ref["addr"] + ref["size"] <= p["vaddr"] + p["filesz"]
              and p["off"] - p["vaddr"] == ref["off"] - ref["addr"]]
    check(len(holder) == 1, what + ": one PT_LOAD maps .rocm_kpack_ref at its file offset")
    load = holder[0]
    check(load == loads[-1], what + ": the new PT_LOAD is the last")
    e_type, e_phoff = struct.unpack_from("<H", data, 16)[0], struct.unpack_from("<Q", data, 32)[0]
    check(e_phoff == load["off"], what + ": e_phoff is the new PT_LOAD's start")
    for p in segs:
        if p["type"] == "PHDR":
            check(p["off"] == e_phoff and p["vaddr"] == load["vaddr"] and p["off"] + p["filesz"] <= ref["off"],
                  what + ": PT_PHDR is the relocated table, before the marker")
    marker = data[ref["off"]:ref["off"] + ref["size"]]
    depth = relpath.count("/")
    expect = {"kpack_search_paths": ["../" * depth + ".kpack/%s_@GFXARCH@.kpack" % prefix],
              "kernel_name": "%s/%s" % (prefix, relpath)}
    m = unpack_all(marker)
    check(m == expect and list(m) == list(expect), what + ": marker %r, expected %r" % (m, expect))

    # Wrappers and their relocations.
    count = seg["size"] // 24
    check(count > 0 and seg["size"] % 24 == 0, what + ": wrappers")
    relocs = relocations(img)
    for i in range(count):
        w, o = data[seg["off"] + 24 * i:seg["off"] + 24 * i + 24], odata[os_[".hipFatBinSegment"]["off"] + 24 * i:][:24]
        magic, version, pointer, lo, hi = struct.unpack("<IIQII", w)
        omagic, oversion, _, _, ohi = struct.unpack("<IIQII", o)
        check(omagic == HIPF and magic == HIPK, what + ": wrapper %d HIPF -> HIPK" % i)
        check(version == oversion and hi == ohi and lo == i, what + ": wrapper %d version, reserved1 = index" % i)
        check(pointer == 0, what + ": wrapper %d pointer field 0" % i)
        r = relocs.get(seg["addr"] + 24 * i + 8, [])
        if e_type == 3:  # ET_DYN
            check(r == [("R_X86_64_RELATIVE", ref["addr"])], what + ": wrapper %d RELATIVE -> marker (%r)" % (i, r))
        else:
            check(e_type == 2 and r == [], what + ": non-PIE wrapper %d has no relocation (packer defect kept)" % i)

    # What the archives must hold for this binary: the bundler's unbundling of
    # each bundle of the original's .hip_fatbin, numbered per target.
    if (case, relpath) not in unbundled:
        ofb = os_[".hip_fatbin"]
        bundles = split_bundles(odata[ofb["off"]:ofb["off"] + ofb["size"]])
        check(len(bundles) == count, what + ": %d bundles for %d wrappers" % (len(bundles), count))
        expected = {}  # target -> [(key, entry ID, bytes, bundle index)]
        with tempfile.TemporaryDirectory() as tmp:
            for b, bundle in enumerate(bundles):
                for eid, obj in unbundle(bundle, tmp):
                    target = eid.rsplit("--", 1)[1]
                    lst = expected.setdefault(target, [])
                    lst.append(("%s/%s#%d" % (prefix, relpath, len(lst)), eid, obj, b))
        unbundled[(case, relpath)] = expected
    expected = unbundled[(case, relpath)]
    if case == "kernels":
        # Each target in one TU only (tests/fixtures/build_fixtures.sh, TU_ARCHS): every key is #0,
        # so gfx942's #0 is wrapper 1's code (lds_static) and gfx11-generic's wrapper 2's.
        check(all(len(v) == 1 for v in expected.values()) and
              [b for _, _, _, b in expected["gfx942"]] == [1] and
              [b for _, _, _, b in expected["gfx11-generic"]] == [2], what + ": every key #0")
    if case == "consistent":
        # The control: #N is wrapper N's code for every target.
        check(sorted(expected) == ["gfx1100", "gfx90a", "gfx942"] and
              all([b for _, _, _, b in v] == [0, 1, 2] for v in expected.values()), what + ": #N = wrapper N")
    if case == "mixed_targets":
        # The packer's numbering: gfx90a's #0 is wrapper 1's code, #1 wrapper 2's.
        check([b for _, _, _, b in expected["gfx90a"]] == [1, 2] and
              [b for _, _, _, b in expected["gfx942"]] == [0, 1], what + ": per-target keys != wrapper indices")

    # Loading: a library dlopen'ed by hipk_record; an executable run, its
    # registrations printed at exit when it links the recording HIP library.
    if relpath.endswith(".so"):
        rec = run(RECORD, img, str(ref["size"])).decode().splitlines()
        orec = run(RECORD, orig, "0").decode().splitlines()
    else:
        env = dict(os.environ, HIPK_MARKER_SIZE=str(ref["size"]))
        rec = run(img, env=env).decode().splitlines()
        orec = run(orig, env=dict(os.environ, HIPK_MARKER_SIZE="0")).decode().splitlines()
        check(bool(rec) == case.startswith("mixed_targets_"), what + ": recorded registrations at exit")
    if rec:
        ws = [l.split() for l in rec if l.startswith("wrapper ")]
        check(len(ws) == count, what + ": %d wrappers registered" % len(ws))
        for i, f in enumerate(ws):
            check(f[1] == str(i) and f[3] == "0x%08x" % HIPK and int(f[9], 16) & 0xFFFFFFFF == i,
                  what + ": registered wrapper %s" % " ".join(f))
            if e_type == 3:
                check(int(f[7], 16) == ref["addr"] and f[11] == marker.hex(),
                      what + ": registered wrapper %d points at the marker" % i)
            else:
                check(f[7] == "null" and f[11] == "-", what + ": non-PIE wrapper %d registered null (packer defect)" % i)
        funcs = [l for l in rec if l.startswith("function ")]
        check(funcs and funcs == [l for l in orec if l.startswith("function ")], what + ": same kernels registered")
        check(rec[-1] == "errors 0", what + ": recorded without errors")
    return expected


def check_archives(scheme, case, prefix, expected):
    """The tree's archives: one per target, the binaries' objects in case order."""
    what = "%s/%s" % (scheme, case)
    kdir = os.path.join(D, scheme, case, ".kpack")
    check(sorted(os.listdir(kdir)) == sorted("%s_%s.kpack" % (prefix, t) for t in expected),
          what + ": one archive per target %r" % sorted(expected))
    for target, objs in expected.items():
        path = os.path.join(kdir, "%s_%s.kpack" % (prefix, target))
        toc, stored = read_archive(path)
        check(toc["compression_scheme"] == scheme and toc["group_name"] == prefix and toc["gfx_arches"] == [target]
              and toc["gfx_arch_family"] == target and toc["format_version"] == 1, path + ": TOC fields")
        check(list(toc["toc"]) == [k for k, _, _, _ in objs], path + ": keys, in the binaries' order")
        check(len(stored) == len(objs), path + ": one object per key")
        for ordinal, (key, eid, obj, b) in enumerate(objs):
            e = toc["toc"][key][target]
            check(e["type"] == "hsaco" and e["original_size"] == len(obj) and e["metadata"]["target"] == eid
                  and e["metadata"]["source_prefix"] == prefix and e["ordinal"] == ordinal, path + ": " + key + " fields")
            check(stored[e["ordinal"]] == obj, path + ": " + key + " is bundle %d's %s" % (b, eid))


cases = {}  # case -> (prefix, [(relpath, original)]), in file order
with open(os.path.join(D, "cases.tsv")) as f:
    for line in f:
        if line.startswith("#"): continue
        case, prefix, relpath, original = line.rstrip("\n").split("\t")[:4]
        cases.setdefault(case, (prefix, []))[1].append((relpath, original))
check(len(cases) >= 10, "cases.tsv lists the cases")
for scheme in ("none", "zstd-per-kernel"):
    for case, (prefix, images) in cases.items():
        merged = {}
        for relpath, original in images:
            for target, objs in check_image(scheme, case, prefix, relpath, original).items():
                merged.setdefault(target, []).extend(objs)
        check_archives(scheme, case, prefix, merged)
        print("ok: %s/%s (%d images)" % (scheme, case, len(images)))
print("%d checks: all checks passed" % checks)
EOF
