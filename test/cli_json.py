#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Validate the --json output of the secretmem CLI (used by test/t_cli_*.c).

  cli_json.py check FILE VERDICT [subset]
      FILE holds `secretmem check --json`; every documented key is present
      with the documented type, verdict == VERDICT ("usable", "not usable",
      "memlock limit too small"), every case is listed in order (subset: the
      cases chosen with --case, in order), fact cases are INFO or SKIP, the
      summary matches the cases.
  cli_json.py status FILE [+PID:MAPPED:RESIDENT:MAPPINGS:FDS:FILES[:COMMAND]]... [-PID]...
      FILE holds `secretmem status --json`; +PID must be listed with those
      values (COMMAND optional, compared after JSON decoding; may use \\xNN
      escapes, or *), each +PID spec may end in @FIELD=VALUE or @FIELD~=SUBSTRING
      checks (FIELD: cmdline, unit, container, user, seen, mode, unprotected), -PID
      must not be listed; every process of the unprotected list has a reason,
      and a listed process's unprotected agrees with it; the visibility block and quiet_exit_status agree with the facts.
Exit 0 when valid, 1 otherwise (the reason on stderr).
"""
import json
import re
import sys

STR = (str,)
NUM = (int,)
OPT_STR = (str, type(None))
OPT_NUM = (int, type(None))
BOOL = (bool,)

CHECK_KEYS = {
    "tool": STR, "version": STR, "command": STR, "verdict": STR, "usable": BOOL,
    "reason": OPT_STR, "error": OPT_STR, "backend": STR, "fallback": BOOL,
    "fake_kernel": OPT_STR, "exit_status": NUM, "summary": (dict,), "cases": (list,),
    "environment": (dict,),
}
SUMMARY_KEYS = {"passed": NUM, "failed": NUM, "skipped": NUM, "info": NUM}
CASE_KEYS = {"name": STR, "checks": STR, "result": STR, "reason": STR}
CASE_NAMES = ["flags", "fd", "size", "mmap", "locking", "memlock", "memlock-selftest",
              "memlock-touch", "proc-mem", "process-vm-readv", "ptrace", "reopen",
              "pidfd-getfd", "no-fd", "o-direct", "vmsplice", "vmsplice-remap", "io-uring",
              "userfaultfd", "mremap", "madvise", "pagemap", "memcg", "write", "coredump",
              "fork", "exec", "hibernation"]
# cases that report a fact: INFO (or SKIP), never PASS/FAIL
INFO_CASES = {"pidfd-getfd", "pagemap"}
VERDICTS = {"usable": 0, "not usable": 2, "memlock limit too small": 3}
ENV_KEYS = {
    "kernel_release": STR, "architecture": STR, "syscall_number": OPT_NUM,
    "secretmem_enable": OPT_STR, "seccomp_mode": OPT_NUM, "memlock_soft": OPT_NUM,
    "memlock_hard": OPT_NUM, "memlock_locked": OPT_NUM, "memlock_needed": NUM,
    "cap_ipc_lock": BOOL, "memlock_regime": STR,
    "hibernation": STR, "power_state": STR, "power_disk": OPT_STR,
    "directmap_4k_kb": OPT_NUM, "directmap_2m_kb": OPT_NUM, "directmap_1g_kb": OPT_NUM,
}
STATUS_KEYS = {
    "tool": STR, "version": STR, "command": STR, "processes": (list,),
    "totals": (dict,), "scanned": NUM, "uninspected": NUM, "uninspected_pids": (list,),
    "visibility": (dict,), "hibernation": (dict,), "quiet_exit_status": NUM,
    "heap_without_secret_memory": (list,), "unprotected": (list,),
    "environment_cut": NUM, "environment_cut_pids": (list,),
}
PROC_KEYS = {
    "pid": NUM, "command": STR, "cmdline": STR, "cmdline_cut": BOOL, "user": STR, "uid": OPT_NUM,
    "unit": OPT_STR, "container": OPT_STR, "mapped_bytes": NUM,
    "resident_bytes": NUM, "mappings": NUM, "fds": NUM, "files": NUM,
    "libsecretmem": (dict,), "heap": (dict, type(None)), "unprotected": OPT_STR,
}
HEAP_KEYS = {"readable": BOOL, "state": STR, "secret_bytes": NUM, "fallback_bytes": NUM,
             "plain_bytes": NUM, "plain_blocks": NUM, "early_bytes": NUM, "refusals": NUM,
             "huge_allocations": NUM, "huge_threshold": NUM, "require": BOOL, "reason": OPT_STR,
             "adopted_bytes": NUM, "adopted_ranges": NUM, "python": OPT_STR,
             "stack_secret_bytes": NUM, "stacks": OPT_STR, "stack_clearings": OPT_NUM}
HEAP_ONLY_KEYS = {"pid": NUM, "command": STR, "cmdline": STR, "cmdline_cut": BOOL, "user": STR,
                  "heap": (dict,)}
UNPROT_KEYS = {"pid": NUM, "command": STR, "cmdline": STR, "cmdline_cut": BOOL, "user": STR,
               "reason": STR}
LIB_KEYS = {"seen": STR, "mode": STR, "environment": OPT_STR, "environment_cut": BOOL}
VIS_KEYS = {"complete": BOOL, "hidepid": OPT_STR, "subset": OPT_STR, "gid": OPT_NUM,
            "hidden_processes_possible": BOOL, "pid_namespace": BOOL}
TOTAL_KEYS = {"processes": NUM, "mapped_bytes": NUM, "resident_bytes": NUM,
              "fds": NUM, "files": NUM}
HIB_KEYS = {"state": STR, "blocking_processes": NUM, "power_state": STR}


def die(msg):
    sys.stderr.write("cli_json: %s\n" % msg)
    sys.exit(1)


def keys(obj, spec, where):
    if not isinstance(obj, dict):
        die("%s is not an object" % where)
    for k, types in spec.items():
        if k not in obj:
            die("%s lacks key %r" % (where, k))
        v = obj[k]
        # bool is an int in Python: keep them apart
        if isinstance(v, bool) and bool not in types:
            die("%s.%s is a boolean" % (where, k))
        if not isinstance(v, types):
            die("%s.%s has type %s" % (where, k, type(v).__name__))
    extra = set(obj) - set(spec)
    if extra:
        die("%s has undocumented keys %s" % (where, sorted(extra)))


def check(doc, verdict, want_subset=False):
    keys(doc, CHECK_KEYS, "check")
    if doc["tool"] != "secretmem" or doc["command"] != "check":
        die("tool/command wrong")
    if doc["verdict"] != verdict:
        die("verdict %r, expected %r (reason: %s)" % (doc["verdict"], verdict, doc["reason"]))
    if doc["verdict"] not in VERDICTS:
        die("verdict %r is not documented" % doc["verdict"])
    if doc["usable"] != (verdict == "usable"):
        die("usable disagrees with verdict")
    if doc["usable"] and (doc["reason"] is not None or doc["error"] is not None):
        die("usable, but reason/error set")
    if not doc["usable"] and not doc["reason"]:
        die("not usable without a reason")
    if verdict != "usable" and doc["exit_status"] != VERDICTS[verdict]:
        die("exit_status %d for verdict %r" % (doc["exit_status"], verdict))
    if doc["backend"] not in ("secret", "fallback", "none"):
        die("backend %r" % doc["backend"])
    keys(doc["summary"], SUMMARY_KEYS, "summary")
    names = []
    counts = {"PASS": 0, "FAIL": 0, "SKIP": 0, "INFO": 0}
    for i, c in enumerate(doc["cases"]):
        keys(c, CASE_KEYS, "cases[%d]" % i)
        if c["result"] not in counts:
            die("case %s result %r" % (c["name"], c["result"]))
        if not c["reason"]:
            die("case %s has no reason" % c["name"])
        if c["name"] in INFO_CASES and c["result"] in ("PASS", "FAIL"):
            die("case %s reports a fact, but is %s" % (c["name"], c["result"]))
        if c["result"] == "INFO" and c["name"] not in INFO_CASES:
            die("case %s is INFO, but is not a fact case" % c["name"])
        counts[c["result"]] += 1
        names.append(c["name"])
    # all cases in order, or (check --case) a subset in the same order
    if names != CASE_NAMES and names != [n for n in CASE_NAMES if n in names]:
        die("case names %s" % names)
    if len(names) != len(set(names)) or (len(names) < len(CASE_NAMES) and not want_subset):
        die("case names %s (expected all %d)" % (names, len(CASE_NAMES)))
    s = doc["summary"]
    if (s["passed"], s["failed"], s["skipped"], s["info"]) != (
            counts["PASS"], counts["FAIL"], counts["SKIP"], counts["INFO"]):
        die("summary %s does not match the cases %s" % (s, counts))
    if doc["exit_status"] == 0 and counts["FAIL"]:
        die("exit_status 0 with failed cases")
    keys(doc["environment"], ENV_KEYS, "environment")
    env = doc["environment"]
    if env["hibernation"] not in ("available", "unavailable", "not supported"):
        die("environment.hibernation %r" % env["hibernation"])
    if doc["fake_kernel"] not in (None, "plain", "charge-at-touch", "charge-at-touch-nosigbus",
                                  "charge-at-touch-uncharge"):
        die("fake_kernel %r" % doc["fake_kernel"])
    if env["memlock_regime"] not in ("mmap-time", "fault-time", "unknown"):
        die("environment.memlock_regime %r" % env["memlock_regime"])
    print("check json ok: %s, %s" % (doc["verdict"], s))


def heap_keys(h, where):
    """The heap module's figures: all of them when readable, else only that."""
    if h is None:
        return
    if h.get("readable"):
        keys(h, HEAP_KEYS, where)
        if h["state"] not in ("active", "stood down", "inactive"):
            die("%s.state %r" % (where, h["state"]))
        if (h["state"] == "inactive") != (h["reason"] is not None):
            die("%s: a reason goes with state inactive, and only with it: %r" % (where, h))
    else:
        keys(h, {"readable": BOOL}, where)


def status(doc, specs):
    keys(doc, STATUS_KEYS, "status")
    if doc["tool"] != "secretmem" or doc["command"] != "status":
        die("tool/command wrong")
    by_pid = {}
    for i, p in enumerate(doc["processes"]):
        keys(p, PROC_KEYS, "processes[%d]" % i)
        keys(p["libsecretmem"], LIB_KEYS, "processes[%d].libsecretmem" % i)
        if p["libsecretmem"]["seen"] not in ("preload", "heap", "shared-library", "not seen"):
            die("processes[%d].libsecretmem.seen %r" % (i, p["libsecretmem"]["seen"]))
        heap_keys(p["heap"], "processes[%d].heap" % i)
        by_pid[p["pid"]] = p
    for i, p in enumerate(doc["heap_without_secret_memory"]):
        keys(p, HEAP_ONLY_KEYS, "heap_without_secret_memory[%d]" % i)
        heap_keys(p["heap"], "heap_without_secret_memory[%d].heap" % i)
    unprot = {}
    for i, p in enumerate(doc["unprotected"]):
        keys(p, UNPROT_KEYS, "unprotected[%d]" % i)
        if not p["reason"]:
            die("unprotected[%d] has no reason" % i)
        unprot[p["pid"]] = p["reason"]
    for pid, p in by_pid.items():
        if p["unprotected"] != unprot.get(pid):
            die("pid %d: unprotected %r, but the unprotected list says %r" % (pid, p["unprotected"], unprot.get(pid)))
    keys(doc["totals"], TOTAL_KEYS, "totals")
    keys(doc["hibernation"], HIB_KEYS, "hibernation")
    keys(doc["visibility"], VIS_KEYS, "visibility")
    v = doc["visibility"]
    if v["complete"] != (not doc["uninspected"] and not v["hidden_processes_possible"]
                         and not v["pid_namespace"]):
        die("visibility.complete disagrees with the facts")
    want_quiet = 1 if doc["processes"] else (0 if v["complete"] else 2)
    if doc["quiet_exit_status"] != want_quiet:
        die("quiet_exit_status %d, expected %d" % (doc["quiet_exit_status"], want_quiet))
    if len(doc["uninspected_pids"]) != min(doc["uninspected"], 64):
        die("uninspected_pids does not match uninspected")
    if len(doc["environment_cut_pids"]) != min(doc["environment_cut"], 64):
        die("environment_cut_pids does not match environment_cut")
    t = doc["totals"]
    if t["processes"] != len(doc["processes"]):
        die("totals.processes %d != %d listed" % (t["processes"], len(doc["processes"])))
    for k in ("mapped_bytes", "resident_bytes", "fds"):
        if t[k] != sum(p[k] for p in doc["processes"]):
            die("totals.%s is not the sum" % k)
    if doc["hibernation"]["state"] not in ("available", "blocked", "unavailable", "not supported"):
        die("hibernation.state %r" % doc["hibernation"]["state"])
    for spec in specs:
        if spec.startswith("-"):
            pid = int(spec[1:])
            if pid in by_pid:
                die("pid %d is still listed: %s" % (pid, by_pid[pid]))
            continue
        # +PID:...:COMMAND may end in @FIELD=VALUE checks (cmdline~=substring,
        # unit=, seen=, mode~=)
        extra = []
        if "@" in spec:
            spec, *extra = spec.split("@")
        parts = spec[1:].split(":", 6)
        pid = int(parts[0])
        if pid not in by_pid:
            die("pid %d is not listed (listed: %s)" % (pid, sorted(by_pid)))
        p = by_pid[pid]
        want = dict(zip(("mapped_bytes", "resident_bytes", "mappings", "fds", "files"),
                        (int(x) for x in parts[1:6])))
        for k, v in want.items():
            if p[k] != v:
                die("pid %d: %s is %d, expected %d (%s)" % (pid, k, p[k], v, p))
        if len(parts) > 6 and parts[6] != "*":
            comm = parts[6].encode().decode("unicode_escape")
            if p["command"] != comm:
                die("pid %d: command %r, expected %r" % (pid, p["command"], comm))
        for e in extra:
            field, op, val = re.match(r"(\w+)(~?=)(.*)", e).groups()
            have = p["libsecretmem"][field] if field in LIB_KEYS else p[field]
            if (op == "=" and have != val) or (op == "~=" and (have is None or val not in have)):
                die("pid %d: %s is %r, expected %s%r" % (pid, field, have, op, val))
    print("status json ok: %d processes listed" % len(doc["processes"]))


def main():
    if len(sys.argv) < 3:
        die("usage: cli_json.py check|status FILE ...")
    with open(sys.argv[2], "rb") as f:
        raw = f.read()
    try:
        doc = json.loads(raw.decode("utf-8"))
    except (UnicodeDecodeError, ValueError) as e:
        die("not valid JSON: %s" % e)
    if sys.argv[1] == "check":
        check(doc, sys.argv[3] if len(sys.argv) > 3 else "usable",
              len(sys.argv) > 4 and sys.argv[4] == "subset")
    elif sys.argv[1] == "status":
        status(doc, sys.argv[3:])
    else:
        die("unknown mode %r" % sys.argv[1])


if __name__ == "__main__":
    main()
