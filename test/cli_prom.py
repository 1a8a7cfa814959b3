#!/usr/bin/env python3
# SPDX-License-Identifier: MIT
# Copyright (c) 2026 the secretmem authors
"""Validate `secretmem status --prometheus FILE` (used by test/t_cli_status.c).

  cli_prom.py FILE [NAME=VALUE | NAME{LABEL="V",...}=VALUE]...

FILE must be in the Prometheus text exposition format (version 0.0.4): every
line a '# HELP', a '# TYPE' or a sample; metric and label names valid; label
values correctly escaped and UTF-8; every sample of a metric after its TYPE
line, metrics not interleaved, no series twice; values numbers.  Every
documented secretmem metric is present.  Each NAME=VALUE argument must match a
sample exactly (labels compared after unescaping; the labels given must be a
subset of the sample's).  Exit 0 when valid, 1 otherwise (reason on stderr).
"""
import re
import sys

NAME = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
LABEL = r"[a-zA-Z_][a-zA-Z0-9_]*"
SAMPLE = re.compile(r"^(%s)(?:\{(.*)\})?\s+(\S+)(?:\s+(-?\d+))?$" % NAME)
LABEL_PAIR = re.compile(r'\s*(%s)="((?:[^"\\\n]|\\\\|\\"|\\n)*)"\s*(,|$)' % LABEL)
REQUIRED = [
    "secretmem_holders", "secretmem_mapped_bytes", "secretmem_resident_bytes",
    "secretmem_fds", "secretmem_files", "secretmem_hibernation_supported",
    "secretmem_hibernation_blocked", "secretmem_uninspected_processes",
    "secretmem_unprotected_processes",
    "secretmem_scan_complete", "secretmem_scan_timestamp_seconds",
    "secretmem_process_mapped_bytes", "secretmem_process_resident_bytes",
]


def die(msg):
    sys.stderr.write("cli_prom: %s\n" % msg)
    sys.exit(1)


def unescape(v):
    return v.replace("\\n", "\n").replace('\\"', '"').replace("\\\\", "\\")


def parse_labels(text, where):
    labels = {}
    pos = 0
    while pos < len(text):
        m = LABEL_PAIR.match(text, pos)
        if not m:
            die("%s: bad label syntax at %r" % (where, text[pos:]))
        if m.group(1) in labels:
            die("%s: label %s twice" % (where, m.group(1)))
        labels[m.group(1)] = unescape(m.group(2))
        pos = m.end()
    return labels


def parse(raw):
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        die("not UTF-8: %s" % e)
    if not text.endswith("\n"):
        die("the file does not end with a newline")
    types, helps, samples, done, current = {}, {}, {}, set(), None
    for n, line in enumerate(text.split("\n")[:-1], 1):
        where = "line %d" % n
        if line.startswith("#"):
            parts = line.split(None, 3)
            if len(parts) >= 3 and parts[1] in ("HELP", "TYPE"):
                name = parts[2]
                if not re.fullmatch(NAME, name):
                    die("%s: bad metric name %r" % (where, name))
                if parts[1] == "TYPE":
                    if name in types:
                        die("%s: second TYPE for %s" % (where, name))
                    if len(parts) < 4 or parts[3] not in ("counter", "gauge", "histogram",
                                                          "summary", "untyped"):
                        die("%s: bad TYPE line" % where)
                    types[name] = parts[3]
                else:
                    if name in helps:
                        die("%s: second HELP for %s" % (where, name))
                    helps[name] = parts[3] if len(parts) > 3 else ""
            continue
        if not line.strip():
            die("%s: empty line" % where)
        m = SAMPLE.match(line)
        if not m:
            die("%s: not a sample: %r" % (where, line))
        name, labels, value = m.group(1), m.group(2), m.group(3)
        if name not in types:
            die("%s: sample of %s before its TYPE line" % (where, name))
        if name != current:
            if name in done:
                die("%s: samples of %s are not together" % (where, name))
            if current:
                done.add(current)
            current = name
        try:
            float(value)
        except ValueError:
            die("%s: value %r is not a number" % (where, value))
        lab = parse_labels(labels or "", where)
        key = (name, tuple(sorted(lab.items())))
        if key in samples:
            die("%s: series %s twice" % (where, key))
        samples[key] = float(value)
    return types, samples


def main():
    if len(sys.argv) < 2:
        die("usage: cli_prom.py FILE [NAME=VALUE]...")
    with open(sys.argv[1], "rb") as f:
        types, samples = parse(f.read())
    for name in REQUIRED:
        if name not in types:
            die("metric %s is missing" % name)
    for spec in sys.argv[2:]:
        lhs, _, want = spec.rpartition("=")
        m = re.fullmatch(r"(%s)(?:\{(.*)\})?" % NAME, lhs)
        if not m:
            die("bad expectation %r" % spec)
        name, lab = m.group(1), parse_labels(m.group(2) or "", spec)
        found = [v for (n, l), v in samples.items()
                 if n == name and all(dict(l).get(k) == v2 for k, v2 in lab.items())]
        if not found:
            die("no sample %s%s" % (name, lab))
        if float(want) not in found:
            die("%s%s is %s, expected %s" % (name, lab, found, want))
    print("prometheus ok: %d metrics, %d samples" % (len(types), len(samples)))


if __name__ == "__main__":
    main()
