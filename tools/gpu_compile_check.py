#!/usr/bin/env python3
"""Compiles every program clformer-gpu-variants recorded for the GPU targets, offline.

    tools/gpu_compile_check.py LOG_DIR[=TARGET,...] [LOG_DIR ...] [--jobs N] [--targets sm_90,gfx90a,...]
                                [--require-attention] [--json OUT] [--match REGEX]

LOG_DIR holds what clf_context_params.program_log_dir records: <key>.cl (a program's whole
source), <key>.opts (its build options) and kernels.tsv (key, kernel, launched local size,
per-call defines, device). Each LOG_DIR is one tunables profile (its folder name labels it),
compiled for the targets after its '=' (default: all of --targets).

Targets and what each reports per kernel:
  sm_90    clang-15 -target nvptx64-nvidia-nvcl with libclc's nvptx64--nvidiacl.bc, then
           ptxas -arch=sm_90 -v: registers, stack frame, spill stores, shared memory, and the
           occupancy at the local size clformer launches (see occupancy_sm90)
  gfx90a   clang-15 -target amdgcn-amd-amdhsa -mcpu=..., libclc's amdgcn--amdhsa.bc, linked to a
  gfx1100  code object by ld.lld, -Rpass-analysis=kernel-resource-usage: VGPRs (+AGPRs), spilled
           VGPRs, scratch bytes per lane, LDS, occupancy in waves per SIMD
  dg2, pvc ocloc compile --format zebin, read from the binary's .ze_info: SIMD width, GRF count,
           spill/private scratch per thread, SLM

Any compile or link error, or a missing compiler, fails the run (exit 1) with the compiler's
message. The GPU attention goals (no spill, no stack or scratch on sm_90 and gfx90a, sm_90
occupancy >= 25%) are printed as a verdict per attention kernel and fail the run only with
--require-attention.
"""
import argparse
import hashlib
import concurrent.futures as cf
import json
import os
import re
import shutil
import struct
import subprocess
import sys
import tempfile

CLANG = "clang-15"
CLC = "/usr/lib/clc"
ALL_TARGETS = ["sm_90", "gfx90a", "gfx1100", "dg2", "pvc"]
# Kernels clformer launches with no local size (the driver picks one): occupancy is not shown.
DRIVER_LOCAL = {"pack_panels", "rows_to_half"}


def find_tool(name, extra_dirs=()):
    for d in extra_dirs:
        p = os.path.join(d, name)
        if os.access(p, os.X_OK):
            return p
    return shutil.which(name)


def run(cmd, cwd=None):
    p = subprocess.run(cmd, cwd=cwd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    return p.returncode, p.stdout


def compile_error(out):
    """The lines of a compiler's output that say error (warnings and remarks left out)."""
    lines = [l for l in out.splitlines() if re.search(r"\berror\b|fatal", l, re.I)]
    return "\n".join(lines[:12]) or out[-2000:]


def by_function(out, start, again=None):
    """A compiler report's lines grouped by function: a line matching `start` opens the group of
    the function it names; one matching `again` goes back to that function's group if it has
    one (ptxas reports helpers as well as entries), else drops lines until the next."""
    groups, cur = {}, None
    for line in out.splitlines():
        m = re.search(start, line)
        if m:
            cur = groups.setdefault(m.group(1), [])
            continue
        m = re.search(again, line) if again else None
        if m:
            cur = groups.get(m.group(1))
            continue
        if cur is not None:
            cur.append(line)
    return groups


def nvptx(src, opts, tmp, tools):
    ptx = os.path.join(tmp, "k.ptx")
    rc, out = run([CLANG, "-cl-std=CL1.2", "-target", "nvptx64-nvidia-nvcl", "-Xclang",
                   "-finclude-default-header", "-Xclang", "-mlink-builtin-bitcode", "-Xclang",
                   os.path.join(CLC, "nvptx64--nvidiacl.bc"), "-O3", "-S", *opts, "-x", "cl", src,
                   "-o", ptx])
    if rc != 0:
        return None, "clang (nvptx64): " + compile_error(out)
    text = open(ptx).read()
    text = re.sub(r"^\.version .*$", ".version 8.0", text, count=1, flags=re.M)
    text = re.sub(r"^\.target .*$", ".target sm_90", text, count=1, flags=re.M)
    open(ptx, "w").write(text)
    rc, out = run([tools["ptxas"], "-arch=sm_90", "-v", ptx, "-o", os.path.join(tmp, "k.cubin")])
    if rc != 0:
        return None, "ptxas sm_90: " + compile_error(out)
    res = {}
    for name, lines in by_function(out, r"Compiling entry function '(\w+)'",
                                   r"Function properties for (\w+)").items():
        r = res[name] = {}
        for line in lines:
            m = re.search(r"(\d+) bytes stack frame, (\d+) bytes spill stores, "
                          r"(\d+) bytes spill loads", line)
            if m:
                r["stack"], r["spill"] = int(m.group(1)), int(m.group(2)) + int(m.group(3))
            m = re.search(r"Used (\d+) registers", line)
            if m:
                r["regs"] = int(m.group(1))
                sm = re.search(r"(\d+) bytes smem", line)
                r["smem"] = int(sm.group(1)) if sm else 0
    return res, None


def amdgcn(src, opts, tmp, tools, cpu):
    rc, out = run([CLANG, "-cl-std=CL1.2", "-target", "amdgcn-amd-amdhsa", "-mcpu=" + cpu,
                   "-nogpulib", "-Xclang", "-finclude-default-header", "-Xclang",
                   "-mlink-builtin-bitcode", "-Xclang", os.path.join(CLC, "amdgcn--amdhsa.bc"),
                   "-O3", "-fuse-ld=lld", "--ld-path=" + tools["ld.lld"],
                   "-Rpass-analysis=kernel-resource-usage", *opts, "-x", "cl", src, "-o",
                   os.path.join(tmp, "k.co")])
    if rc != 0:
        return None, "clang/ld.lld (%s): %s" % (cpu, compile_error(out))
    res = {}
    for name, lines in by_function(out, r"remark: Function Name: (\w+)").items():
        r = res[name] = {}
        for line in lines:
            m = re.search(r"remark:\s+([A-Za-z ]+?)(?: \[[^\]]*\])?: (\d+) \[-Rpass", line)
            if m:
                r[m.group(1).strip()] = int(m.group(2))
    return {k: {"vgpr": v.get("VGPRs", 0) + v.get("AGPRs", 0), "sgpr": v.get("SGPRs", 0),
                "spill": v.get("VGPRs Spill", 0) + v.get("SGPRs Spill", 0),
                "scratch": v.get("ScratchSize", 0), "lds": v.get("LDS Size", 0),
                "waves": v.get("Occupancy", 0)} for k, v in res.items()}, None


def ze_info(path):
    """The .ze_info section (YAML text) of a zebin, or None."""
    d = open(path, "rb").read()
    if d[:4] != b"\x7fELF":
        return None
    shoff = struct.unpack_from("<Q", d, 0x28)[0]
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", d, 0x3A)
    secs = [struct.unpack_from("<IIQQQQIIQQ", d, shoff + i * shentsize) for i in range(shnum)]
    stro = secs[shstrndx][4]
    for s in secs:
        name = d[stro + s[0]:d.index(b"\0", stro + s[0])]
        if name == b".ze_info":
            return d[s[4]:s[4] + s[5]].decode()
    return None


def intel(src, opts, tmp, tools, device):
    rc, out = run([tools["ocloc"], "compile", "-q", "-file", src, "-device", device, "-options",
                   " ".join(opts), "--format", "zebin", "-out_dir", tmp, "-output", "k",
                   "-output_no_suffix"])
    if rc != 0 or "Build failed" in out:
        return None, "ocloc %s: %s" % (device, compile_error(out))
    bins = [f for f in os.listdir(tmp) if f.startswith("k") and not f.endswith(".spv")
            and not f.endswith(".ptx") and not f.endswith(".co") and not f.endswith(".cubin")]
    info = None
    for b in bins:
        info = ze_info(os.path.join(tmp, b)) or info
    if info is None:
        return None, "ocloc %s: no zebin .ze_info in its output" % device
    res, cur, buf = {}, None, None
    for line in info.splitlines():
        m = re.match(r"\s*- name:\s+(\w+)\s*$", line)
        if m and line.startswith("  - name"):
            cur = res.setdefault(m.group(1), {"simd": 0, "grf": 0, "spill": 0, "private": 0,
                                               "slm": 0})
            continue
        if cur is None:
            continue
        for key, field in (("simd_size", "simd"), ("grf_count", "grf"), ("slm_size", "slm")):
            m = re.match(r"\s+%s:\s+(\d+)" % key, line)
            if m:
                cur[field] = int(m.group(1))
        m = re.match(r"\s+- type:\s+(\w+)", line)
        if m:
            buf = m.group(1)
        m = re.match(r"\s+usage:\s+(\w+)", line)
        if m:
            buf = m.group(1)
        m = re.match(r"\s+size:\s+(\d+)", line)
        if m and buf in ("spill_fill_space", "private_space", "scratch"):
            cur["spill" if buf == "spill_fill_space" else "private"] += int(m.group(1))
            buf = None
    return res, None


def occupancy_sm90(regs, smem, threads):
    """Resident warps / 64 on an H100/H200 SM for blocks of `threads` work-items: 64 warps,
    32 blocks, 65536 registers (allocated per warp in units of 256), 228 KiB of shared memory
    (1 KiB reserved per block). Returns (fraction, what limits it)."""
    warps = (threads + 31) // 32
    per_warp = max(256, (regs * 32 + 255) // 256 * 256)
    limits = {"warps": 64 // warps, "blocks": 32,
              "registers": (65536 // per_warp) // warps,
              "shared memory": 233472 // (smem + 1024)}
    blocks = min(limits.values())
    what = min(limits, key=lambda k: (limits[k], k != "warps"))
    return blocks * warps / 64.0, what


def compile_program(key, log, targets, tools):
    opts = open(os.path.join(log, key + ".opts")).read().split()
    out = {}
    with tempfile.TemporaryDirectory() as tmp:
        # Recorded on Oclgrind, which reports no hardware FMA: every target here has one (its
        # driver reports CL_FP_FMA), so its programs are built with MAD as fma() (common.cl).
        text = open(os.path.join(log, key + ".cl"), "rb").read()
        head = b"#define CLF_HW_FMA 0\n"
        if not text.startswith(head):
            return key, {t: (None, "recorded source does not start with %r" % head) for t in targets}
        src = os.path.join(tmp, key + ".cl")
        open(src, "wb").write(b"#define CLF_HW_FMA 1\n" + text[len(head):])
        for t in targets:
            sub = os.path.join(tmp, t)
            os.mkdir(sub)
            if t == "sm_90":
                out[t] = nvptx(src, opts, sub, tools)
            elif t.startswith("gfx"):
                out[t] = amdgcn(src, opts, sub, tools, t)
            else:
                out[t] = intel(src, opts, sub, tools, t)
    return key, out


def read_kernels(log):
    rows = {}
    for line in open(os.path.join(log, "kernels.tsv")):
        f = line.rstrip("\n").split("\t")
        if len(f) < 6:
            continue
        key, name, local, extra = f[0], f[1], tuple(int(x) for x in f[2:5]), f[5]
        # One row per (program, kernel): the largest local size recorded (a warm-up's request
        # of 1 x 1 x 1 beside the launch's own shape).
        old = rows.get((key, name))
        if old is None or local[0] * local[1] * local[2] > old[0][0] * old[0][1] * old[0][2]:
            rows[(key, name)] = (local, extra)
    return rows


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("logs", nargs="+")
    ap.add_argument("--jobs", type=int, default=os.cpu_count() or 2)
    ap.add_argument("--targets", default=",".join(ALL_TARGETS))
    ap.add_argument("--require-attention", action="store_true")
    ap.add_argument("--json")
    ap.add_argument("--match", help="only kernels whose name matches this regular expression")
    a = ap.parse_args()
    targets = a.targets.split(",")
    tools = {"ptxas": find_tool("ptxas", [os.environ.get("CLF_PTXAS_DIR", ""),
                                          "/usr/local/cuda/bin"]),
             "ld.lld": find_tool("ld.lld-15") or find_tool("ld.lld"),
             "ocloc": find_tool("ocloc"), CLANG: find_tool(CLANG)}
    need = {CLANG: any(t != "dg2" and t != "pvc" for t in targets),
            "ptxas": "sm_90" in targets, "ld.lld": any(t.startswith("gfx") for t in targets),
            "ocloc": any(t in ("dg2", "pvc") for t in targets)}
    missing = [k for k, v in need.items() if v and not tools[k]]
    for bc in ("nvptx64--nvidiacl.bc", "amdgcn--amdhsa.bc"):
        if not os.path.exists(os.path.join(CLC, bc)):
            missing.append(os.path.join(CLC, bc))
    if missing:
        print("gpu-compile-check: missing: %s (scripts/gpu-compile-check.sh installs them)"
              % ", ".join(missing), file=sys.stderr)
        return 1

    failures, table, report = [], [], []
    # LOG_DIR or LOG_DIR=target,target: that profile compiled for those targets only.
    logs = []
    for spec in a.logs:
        d, _, t = spec.partition("=")
        logs.append((d, [x for x in t.split(",") if x] if t else targets))
    # One compile per distinct (source, options, target): profiles share most programs.
    loaded, jobs = [], {}
    for log, tgts in logs:
        kernels = read_kernels(log)
        if a.match:
            kernels = {kn: v for kn, v in kernels.items() if re.search(a.match, kn[1])}
        digest = {}
        for key in {k for k, _ in kernels}:
            text = open(os.path.join(log, key + ".cl"), "rb").read()
            opts = open(os.path.join(log, key + ".opts"), "rb").read()
            h = hashlib.sha1(text + b"\0" + opts).hexdigest()
            digest[key] = h
            jobs.setdefault(h, (log, key, set()))[2].update(tgts)
        loaded.append((log, tgts, kernels, digest))
    results = {}
    with cf.ThreadPoolExecutor(max_workers=max(1, a.jobs)) as ex:
        futs = {ex.submit(compile_program, key, log, sorted(ts), tools): h
                for h, (log, key, ts) in jobs.items()}
        for f in cf.as_completed(futs):
            results[futs[f]] = f.result()[1]
    for log, tgts, kernels, digest in loaded:
        profile = os.path.basename(os.path.normpath(log))
        for (key, name), (local, extra) in sorted(kernels.items(), key=lambda kv: (kv[0][1],
                                                                                   kv[1][1])):
            row = {"profile": profile, "kernel": name, "variant": extra, "local": local,
                   "program": key}
            for t in tgts:
                res, err = results[digest[key]][t]
                if err:
                    failures.append("%s %s [%s] on %s:\n%s" % (profile, name, extra, t, err))
                    row[t] = {"error": err}
                    continue
                r = res.get(name)
                if r is None:
                    failures.append("%s %s: %s reports no such kernel" % (profile, name, t))
                    row[t] = {"error": "kernel missing"}
                    continue
                if t == "sm_90" and name not in DRIVER_LOCAL:
                    occ, lim = occupancy_sm90(r.get("regs", 0), r.get("smem", 0),
                                              local[0] * local[1] * local[2])
                    r = dict(r, occupancy=occ, limit=lim)
                row[t] = r
            table.append(row)
        report.append((profile, len(digest), tgts))
    print("gpu-compile-check: %d distinct programs (source and options) over %d "
          "profiles" % (len(jobs), len(logs)))

    print_table(table, targets)
    bad = attention_verdicts(table, targets)
    for profile, n, tgts in report:
        print("gpu-compile-check: %s: %d programs, %s" % (profile, n, ", ".join(tgts)))
    if a.json:
        json.dump(table, open(a.json, "w"), indent=1, default=list)
    if failures:
        print("\ngpu-compile-check: %d FAILED compile(s):" % len(failures), file=sys.stderr)
        for f in failures:
            print(f, file=sys.stderr)
        return 1
    if bad and a.require_attention:
        print("gpu-compile-check: %d attention kernel(s) miss the GPU goals" % bad, file=sys.stderr)
        return 1
    print("gpu-compile-check: every program compiled and linked for every target")
    return 0


def cell(t, r):
    """A table cell: the main figure, then each nonzero (label, field) of the target."""
    if "error" in r:
        return "ERROR"
    if t == "sm_90":
        head, fields = "%dr" % r.get("regs", 0), (("stk", "stack"), ("spl", "spill"), ("sh", "smem"))
    elif t.startswith("gfx"):
        head, fields = "%dv" % r["vgpr"], (("spl", "spill"), ("scr", "scratch"), ("lds", "lds"))
    else:
        head, fields = "simd%d" % r["simd"], (("spl", "spill"), ("prv", "private"), ("slm", "slm"))
    s = head + "".join(" %s%d" % (label, r[f]) for label, f in fields if r.get(f))
    if "occupancy" in r:
        s += " %d%%%s" % (round(100 * r["occupancy"]), r["limit"][0])
    if t.startswith("gfx"):
        s += " w%d" % r["waves"]
    return s


def print_table(table, targets):
    print("Per kernel and target (sm_90: registers, stk stack bytes, spl spill bytes, sh shared "
          "bytes, occupancy at the launched local size and its limit: w warps, r registers, "
          "s shared memory, b blocks; gfx: VGPRs+AGPRs, spilled registers, scr scratch bytes "
          "per lane, lds bytes, w waves per SIMD; Intel: SIMD width, spl spill and prv private "
          "bytes per thread, slm bytes)")
    head = ["profile", "kernel", "variant", "local"] + targets
    rows = [[r["profile"], r["kernel"], r["variant"] or "-", "x".join(map(str, r["local"]))] +
            [cell(t, r[t]) if t in r else "" for t in targets] for r in table]
    widths = [max(len(str(x[i])) for x in rows + [head]) for i in range(len(head))]
    for x in [head] + rows:
        print("  ".join(str(v).ljust(w) for v, w in zip(x, widths)).rstrip())


# The attention kernels of the GPU path (attention.LOCAL_KV 1, the default where local memory is
# on chip). attention_tiled and attention_tiled_t are the CPU path (a query's row in private
# memory is registers and L1 there); they are compiled and tabled, not held to these goals.
GPU_ATTENTION = ("attention_flash", "attention_flash_split", "attention_combine")


def attention_verdicts(table, targets):
    """The GPU attention goals at head sizes 64 and 128: no spill and no stack on sm_90, no spill
    and no scratch on gfx90a, sm_90 occupancy >= 25%. Prints each GPU-path attention kernel's
    figures and what limits its occupancy; returns how many miss the goals."""
    bad = 0
    print("\nGPU attention at head sizes 64 and 128 (goal: no spill, stack or scratch on sm_90 "
          "and gfx90a; sm_90 occupancy >= 25%):")
    for r in table:
        s, g = r.get("sm_90"), r.get("gfx90a")
        s = s if s and "error" not in s else None
        g = g if g and "error" not in g else None
        if r["kernel"] not in GPU_ATTENTION or not (s or g):
            continue
        dh = re.search(r"DH=(\d+)", r["variant"] or "")
        if not dh or dh.group(1) not in ("64", "128"):
            continue
        why, figs = [], []
        if s:
            if s.get("stack") or s.get("spill"):
                why.append("sm_90 stack %d spill %d" % (s.get("stack", 0), s.get("spill", 0)))
            if s.get("occupancy", 1) < 0.25:
                why.append("sm_90 occupancy %d%%" % round(100 * s["occupancy"]))
            figs.append("sm_90 %d regs, stack %d, spill %d, %d%% occupancy (limited by %s)" % (
                s.get("regs", 0), s.get("stack", 0), s.get("spill", 0),
                round(100 * s.get("occupancy", 0)), s.get("limit", "-")))
        if g:
            if g["spill"] or g["scratch"]:
                why.append("gfx90a spill %d scratch %d" % (g["spill"], g["scratch"]))
            figs.append("gfx90a %d VGPRs, spill %d, scratch %d, %d waves/SIMD" % (
                g["vgpr"], g["spill"], g["scratch"], g["waves"]))
        print("  %-8s %-21s %-27s %s%s" % (r["profile"], r["kernel"], r["variant"],
                                           "; ".join(figs),
                                           ": MISSED (" + "; ".join(why) + ")" if why else ""))
        if why:
            bad += 1
    return bad


if __name__ == "__main__":
    sys.exit(main())
