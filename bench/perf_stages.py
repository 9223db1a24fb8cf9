#!/usr/bin/env python3
"""CPU of a server by stage, from `perf script -F period,ip,sym,dso` of a
`perf record -e cpu-clock -g` (stdin): each sample's time goes to one
stage.

- Kernel samples go to the system call their stack sits under (the kernel
  keeps exact stacks): read (recv, read), write (send, write), wait
  (epoll_wait), other system calls, page faults, or interrupts and the
  rest.
- User samples go by the function they were taken in (a release build
  keeps no frame pointers, so callers are not trusted), by the rules in
  USER_STAGES, first match: parse, dispatch, store and commands, reply,
  statistics and clock, event loop. A sample in libc or the allocator
  whose next frame is one of the server's own functions goes to that
  function's stage; otherwise to "copies, allocation".

usage: perf script -F period,ip,sym,dso | perf_stages.py [--label L]
       [--requests N]   (with N: each stage's CPU per request too)
"""
import argparse
import re
import sys
from collections import defaultdict

KERNEL_CALLS = [
    ("kernel: read", r"^(__x64_sys_(recvfrom|recvmsg|read|readv)|"
                     r"ksys_read|__sys_recvfrom|tcp_recvmsg)$"),
    ("kernel: write", r"^(__x64_sys_(sendto|sendmsg|write|writev)|"
                      r"ksys_write|__sys_sendto|tcp_sendmsg)$"),
    ("kernel: wait", r"^(__x64_sys_epoll_p?wait2?|do_epoll_wait)$"),
    ("kernel: other calls", r"^__x64_sys_"),
    ("kernel: page faults", r"^(asm_exc_page_fault|exc_page_fault)$"),
]

USER_STAGES = [
    ("statistics, clock", r"clock_gettime|MonoUs|MonotonicNs|LocalStats|"
                          r"Latency|StatsSegment|::Record\b|Sketch"),
    ("parse", r"ParseCommand|LengthLine|ParseInline|ParseArray|ParseBulk"),
    ("dispatch", r"shmkv::Execute\b|Registry::|CommandRow|tolower|"
                 r"shmkv::cmd::Lower|strcasecmp"),
    ("reply", r"shmkv::Reply::|shmkv::cmd::Reply|ReplyBulk|ReplyError|"
              r"AppendLength|to_chars"),
    ("store, commands", r"Store|Txn|Journal|ShmHashMap|ShmLinkTable|"
                        r"ShmHashTable|HashKeyIn|Blob|Pack|Unpack|"
                        r"ListValue|HashValue|SetValue|ZSet|Zset|shmkv::cmd::|"
                        r"Graves|Parts|Varint"),
    ("event loop", r"worker_impl|Worker::|OnReadable|Flush|Process"),
]

LIBRARY = re.compile(r"libc[.-]|libstdc|libjemalloc|ld-linux|\[unknown\]")


def stage_of(frames):
    """frames: [(sym, dso)], leaf first."""
    if not frames:
        return "unknown"
    if frames[0][1] == "[kernel.kallsyms]":
        for sym, dso in frames:
            if dso != "[kernel.kallsyms]":
                break
            for name, rule in KERNEL_CALLS:
                if re.search(rule, sym):
                    return name
        return "kernel: interrupts, other"
    candidates = [frames[0]]
    if LIBRARY.search(frames[0][1]) and len(frames) > 1 and \
            not LIBRARY.search(frames[1][1]):
        candidates.append(frames[1])
    for sym, _ in candidates:
        for name, rule in USER_STAGES:
            if re.search(rule, sym):
                return name
    if LIBRARY.search(frames[0][1]):
        return "copies, allocation"
    return "user: other"


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--label", default="")
    ap.add_argument("--requests", type=int, default=0)
    args = ap.parse_args()
    ns = defaultdict(int)
    period, frames = None, []

    def close():
        if period is not None:
            ns[stage_of(frames)] += period

    for line in sys.stdin:
        if not line.strip():
            continue
        if not line.startswith("\t") and not line.startswith(" " * 8 + "0"):
            head = line.split()
            if head and head[0].isdigit() and len(head) == 1:
                close()
                period, frames = int(head[0]), []
                continue
        m = re.match(r"\s*[0-9a-f]+\s+(.*)\s+\((.*)\)\s*$", line)
        if m and period is not None:
            frames.append((m.group(1), m.group(2)))
    close()
    total = sum(ns.values())
    if total == 0:
        print(f"{args.label}: no samples")
        return
    print(f"{args.label}: {total / 1e9:.2f} s of CPU sampled")
    kernel = sum(v for k, v in ns.items() if k.startswith("kernel"))
    print(f"  {'kernel, all':24} {100 * kernel / total:5.1f}%")
    for name, v in sorted(ns.items(), key=lambda kv: -kv[1]):
        extra = ""
        if args.requests:
            extra = f"  {v / args.requests:7.1f} ns/req"
        print(f"  {name:24} {100 * v / total:5.1f}%{extra}")


if __name__ == "__main__":
    main()
