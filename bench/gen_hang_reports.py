#!/usr/bin/env python3
"""Writes a JSON Lines hang report of about SIZE_MB megabytes (docs/report-format.md, version 1),
as a fleet would produce it: hangs of 40 kinds (signatures) of different frequencies, from 300
hosts, 2000 processes and 3 builds, each with 1-3 stacks of 8-32 frames, a timeline of 10-100
samples and its modules, like the agent's encoder writes them (same field order).

usage: bench/gen_hang_reports.py OUT.jsonl [SIZE_MB] [SEED]   (defaults: 800, 1)
"""
import random
import sys

out_path = sys.argv[1]
size_mb = int(sys.argv[2]) if len(sys.argv) > 2 else 800
rng = random.Random(int(sys.argv[3]) if len(sys.argv) > 3 else 1)

modules = [("/srv/app/bin/server", "%040x" % rng.getrandbits(160), 0x55d0c0a00000)] + [
    ("/usr/lib/x86_64-linux-gnu/%s" % name, "%040x" % rng.getrandbits(160), 0x7f0000000000 + i * 0x1000000)
    for i, name in enumerate(["libc.so.6", "libstdc++.so.6", "libssl.so.3", "libz.so.1", "libpq.so.5",
                              "libcrypto.so.3", "libgcc_s.so.1", "libm.so.6", "libuv.so.1"])]
words = ["Request", "Handler", "Cache", "Lookup", "Parse", "Render", "Query", "Index", "Compress",
         "Session", "Storage", "Flush", "Resolve", "Encode", "Template", "Router", "Merge", "Scan"]


def frame(mod, method):
    path, bid, base = modules[mod]
    off = rng.randrange(0x1000, 0x400000)
    sym = "app::%s%s::%s()" % (rng.choice(words), rng.choice(words), rng.choice(words).lower())
    if mod != 0:
        sym = rng.choice(["__poll", "pthread_cond_wait", "read", "memcpy", "deflate", "SSL_read",
                          "std::__detail::_Map_base::operator[]", "PQexec"])
    return ('{"addr":"0x%x","module":"%s","build_id":"%s","offset":"0x%x","symbol":"%s","method":"%s"}'
            % (base + off, path, bid, off, sym, method), sym, path, off)


def kind(k):
    """One kind of hang: its stacks (JSON), culprit, signature, fingerprint, class."""
    stacks, culprit = [], None
    for s in range(rng.randint(1, 3)):
        frames = []
        for i in range(rng.randint(8, 32)):
            mod = 0 if i > 0 or rng.random() < 0.5 else rng.randrange(1, len(modules))
            f = frame(mod, "pc" if i == 0 else "fp")
            frames.append(f)
            if culprit is None and s == 0 and mod == 0:
                culprit = f
        stacks.append(frames)
    sym, path, off = culprit[1], culprit[2], culprit[3]
    cls = rng.choice(["busy", "busy", "blocked", "mixed"])
    return {
        "stacks": stacks,
        "culprit": '{"symbol":"%s","module":"%s","offset":"0x%x","file":"src/%s.cc","line":%d,"frame":0}'
                   % (sym, path, off, sym.split("::")[1].lower(), rng.randint(10, 900)),
        "signature": "%016x" % rng.getrandbits(64),
        "fingerprint": "%016x" % rng.getrandbits(64),
        "class": cls,
    }


kinds = [kind(k) for k in range(40)]
mods = ",".join('{"path":"%s","base":"0x%x","build_id":"%s"}' % (p, base, b) for p, b, base in modules)
weights = [1.0 / (k + 1) for k in range(40)]  # a few kinds dominate, as in real fleets
hosts = ["web-%03d.eu-west" % h for h in range(300)]
builds = ["1.4.%d" % b for b in range(3)]
target = size_mb * 1000 * 1000
written = 0
hang_ids = {}
with open(out_path, "w") as out:
    t = 1763700000000
    while written < target:
        k = rng.choices(range(40), weights)[0]
        kd = kinds[k]
        host = rng.randrange(300)
        pid = 1000 + host * 7 + rng.randrange(7)
        hang_id = hang_ids.get(pid, 0)
        hang_ids[pid] = hang_id + 1
        t += rng.randrange(1, 2000)
        duration = int(rng.lognormvariate(6.2, 0.8)) + 100
        cpu = duration * 95 // 100 if kd["class"] == "busy" else duration // 20
        interval = 10
        n_samples = min(100, max(10, duration // interval))
        stacks_json, counts = [], []
        remaining = n_samples
        for i, frames in enumerate(kd["stacks"]):
            c = remaining if i == len(kd["stacks"]) - 1 else max(1, remaining // 2)
            remaining -= c
            counts.append(c)
            stacks_json.append('{"id":%d,"count":%d,"first_seen_ms":%d,"last_seen_ms":%d,"cpu_ms":%d,"frames":[%s]}'
                               % (i, c, 100 + i, 100 + n_samples * interval, cpu * c // n_samples,
                                  ",".join(f[0] for f in frames)))
        timeline = ",".join('{"t_ms":%d,"stack":%d,"cpu_us":%d,"state":"%s","method":"%s"}'
                            % (100 + j * interval, 0, cpu * 1000 // n_samples,
                               "R" if kd["class"] == "busy" else "S",
                               "signal" if kd["class"] == "busy" else "proc")
                            for j in range(n_samples))
        line = ('{"type":"hang","format_version":1,"pid":%d,"tid":%d,"process":"/srv/app/bin/server",'
                '"process_name":"server","host":"%s","labels":{"build":"%s","region":"eu-west"},'
                '"hang_id":%d,"start_unix_ms":%d,"duration_ms":%d,"cpu_ms":%d,"cpu_percent":%d,'
                '"class":"%s","stopped_ms":0,"threshold_ms":100,"sample_interval_ms":%d,"samples":%d,'
                '"failed_samples":0,"dropped_stacks":0,"fatal":false,"fingerprint":"%s","signature":"%s",'
                '"culprit":%s,"dominant_stack":0,"stacks":[%s],"timeline":[%s],"timeline_truncated":false,'
                '"modules":[%s]}\n'
                % (pid, pid, hosts[host], builds[host % 3], hang_id, t, duration, cpu,
                   cpu * 100 // duration, kd["class"], interval, n_samples, kd["fingerprint"],
                   kd["signature"], kd["culprit"], ",".join(stacks_json), timeline, mods))
        out.write(line)
        written += len(line)
