"""Server instructions per request, counted by callgrind: the measure behind the list-read figures
in commit messages (a page of 20 against one single GET), steady to a fraction of a percent from
run to run where wrk's timings (make bench) vary by tens of percent on a shared machine.

Runs the given server binary (default: the release build, build/treasury-server) under valgrind
--tool=callgrind with counting off, creates bench.py's data through the API (31 approved and 64
pending payments, 46 beneficiaries), then per scenario: 50 warm-up GETs, counting on, 5 more,
counters zeroed, N sequential GETs over one keep-alive TLS connection, a dump. The figure is the
dump's total over N: every thread of the server (request threads, group commit, background
jobs; they idle during reads, and the settlement worker is held still), TLS and HTTP included.
The dumps stay in --out for callgrind_annotate (one file per scenario, named after it):

    /usr/bin/python3 tests/bench/instructions.py                    # build/treasury-server
    /usr/bin/python3 tests/bench/instructions.py --bin /tmp/old-server --out /tmp/cg
    /usr/bin/python3 tests/bench/instructions.py --pg               # on a throwaway PostgreSQL
    /usr/bin/python3 tests/bench/instructions.py --only payments -n 20
    callgrind_annotate --inclusive=yes /tmp/cg/callgrind.out.*payments_limit_20* | head -60

On PostgreSQL the figure is the server's instructions only (not the database's processes).
Takes a minute or two (valgrind runs the server some fifty times slower). Never asserts: prints.
"""

import argparse
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parents[1]
sys.path.insert(0, str(HERE))
sys.path.insert(0, str(REPO / "tests" / "http"))

import bench  # noqa: E402
from client import Client  # noqa: E402

# (name, path template): {pay}, {ben} and {cursor} are filled in once the data exists.
SCENARIOS = [
    ("GET /healthz", "/healthz"),
    ("GET /v1/payments/{id}", "/v1/payments/{pay}"),
    ("GET /v1/payments?limit=20", "/v1/payments?limit=20"),
    ("GET /v1/payments?limit=20&cursor", "/v1/payments?limit=20&cursor={cursor}"),
    ("GET /v1/beneficiaries/{id}", "/v1/beneficiaries/{ben}"),
    ("GET /v1/beneficiaries?limit=20", "/v1/beneficiaries?limit=20"),
]
# Each page against its single GET.
RATIOS = [("GET /v1/payments?limit=20", "GET /v1/payments/{id}"),
          ("GET /v1/beneficiaries?limit=20", "GET /v1/beneficiaries/{id}")]


def control(pid, *args):
    subprocess.run(["callgrind_control"] + list(args) + [str(pid)], check=True,
                   capture_output=True, timeout=120)


def slug(name):
    return re.sub(r"[^A-Za-z0-9]+", "_", name).strip("_")


def dumped_total(out_dir, before):
    """Total instructions of the dump callgrind_control -d just wrote (the file new since)."""
    new = sorted(set(glob.glob(os.path.join(out_dir, "callgrind.out.*"))) - before,
                 key=os.path.getmtime)
    if not new:
        sys.exit("callgrind wrote no dump in %s" % out_dir)
    total = None
    with open(new[-1]) as f:
        for line in f:
            if line.startswith(("summary:", "totals:")):
                total = int(line.split()[1])
    return new[-1], total


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--bin", default=str(REPO / "build" / "treasury-server"))
    ap.add_argument("--out", help="keep the callgrind dumps here (default: a temporary folder)")
    ap.add_argument("-n", type=int, default=100, help="counted requests per scenario (100)")
    ap.add_argument("--pg", action="store_true", help="on a throwaway PostgreSQL cluster")
    ap.add_argument("--only", help="only the scenarios whose name contains this")
    args = ap.parse_args()

    bench.BIN = Path(args.bin).resolve()
    bench.PIN = False
    out_dir = Path(args.out or tempfile.mkdtemp(prefix="instructions-")).resolve()
    shutil.rmtree(out_dir, ignore_errors=True)
    out_dir.mkdir(parents=True)
    root = Path(tempfile.mkdtemp(prefix="instructions-data-"))
    cluster, db_args = None, []
    if args.pg:
        sys.path.insert(0, str(REPO / "tests" / "pg"))
        from cluster import Cluster
        cluster = Cluster().start()
        db_args = ["--database", cluster.url(cluster.create_database())]
    prefix = ["valgrind", "--tool=callgrind", "--instr-atstart=no",
              "--callgrind-out-file=%s/callgrind.out.%%p" % out_dir]
    proc, port, env, log = bench.start_server(
        root, ["--settlement-interval-ms", "3600000"] + db_args, prefix=prefix, timeout=600)
    results = {}
    try:
        tok, _, pay_id, _, _ = bench.setup(proc, port, env, root, db_args, approvals=16 * 4)
        with Client("127.0.0.1", port, cafile=str(root / "data" / "tls.crt"), token=tok) as c:
            bens = [c.post("/v1/beneficiaries", json=dict(bench.BENEFICIARY, name="B%d" % i))
                    .json()["id"] for i in range(45)]
            first = c.get("/v1/payments?limit=20").json()
            assert len(first["data"]) == 20 and first["has_more"], first
            fill = {"pay": pay_id, "ben": bens[0], "cursor": first["next_cursor"]}
            scenarios = [(n, p.format(**fill)) for n, p in SCENARIOS
                         if not args.only or args.only in n]
            time.sleep(1.0)  # the writes' group commits and checkpoints settle
            for name, path in scenarios:
                for _ in range(50):
                    r = c.get(path)
                    assert r.status == 200, (path, r)
                control(proc.pid, "-i", "on")
                for _ in range(5):
                    c.get(path)
                control(proc.pid, "-z")
                for _ in range(args.n):
                    r = c.get(path)
                    assert r.status == 200, (path, r)
                before = set(glob.glob(str(out_dir / "callgrind.out.*")))
                control(proc.pid, "-d", slug(name))
                control(proc.pid, "-i", "off")
                dump, total = dumped_total(str(out_dir), before)
                results[name] = total / args.n
                print("%-36s %9.0f instructions/request  (%6d B)  %s"
                      % (name, results[name], len(r.body), os.path.basename(dump)), flush=True)
    finally:
        bench.stop_server(proc, log, root)
        if cluster:
            cluster.stop()
    for page, single in RATIOS:
        if page in results and single in results:
            print("%s = %.2f x %s" % (page, results[page] / results[single], single))
    print("dumps in %s" % out_dir)


if __name__ == "__main__":
    main()
