#!/usr/bin/env python3
"""What a link's day's rows cost a counting turn over many links, on SQLite alone.

Over 100,000 links nearly every click of a burst is another link's day, and a turn writes each
link's day about 18 rows: eleven breakdown rows (`visit_statistics_breakdown`, one per dimension
and value) and six day sets (`visit_day_bits`: visitors, addresses, and a set for the value of
the hour, the referrer, `utm_source` and `utm_campaign`, each of a visitor or a few). This writes
the same turns three ways, with the server's pragmas (WAL, synchronous NORMAL, a 1 MB page
cache) and a passive checkpoint after each turn, as counting does:

- breakdown rows: the table as it is (WITHOUT ROWID, keyed by day, link, dimension and value,
  with the index by link), `INSERT … ON CONFLICT DO UPDATE SET pv = pv + 1, uv = uv + 1`;
- set rows: the day sets' table as it is (keyed by link, kind, value and day, with the index by
  day), each link's day's six sets read by their keys (the keys joined to the table's, as a turn
  reads them) and written back whole;
- packed: one row a link's day (WITHOUT ROWID, keyed by day and link, with the index by link)
  holding its breakdown values and its six sets in one blob (about 370 bytes here), read by its
  key and written back whole.

Each way: EXIST links' days on the days before, then eight turns of 10,000 new links' days of
today (every one new), then eight turns of 10,000 of those again (every one counted before).
Medians of the eight, CPU and wall. The Python side (building the parameters and the blobs) is in
the figures; adding a turn's counts into a blob read back (in Rust, in memory) is not.

    python3 bench/breakdown_layout.py [EXIST]     # EXIST: 300000
"""
import os
import random
import sqlite3
import sys
import tempfile
import time

EXIST = int(sys.argv[1]) if len(sys.argv) > 1 else 300_000
TURN = 10_000
TURNS = 8
CHUNK = 500
DIMS = ["country", "province", "city", "carrier", "browser", "os", "device", "referrer", "hour",
        "utm_source", "utm_campaign"]
SET_KINDS = ["v", "i", "hour", "referrer", "utm_source", "utm_campaign"]
SET_BYTES = 20
TODAY = "2026-12-07"


def values(link):
    return [(d, f"{d}-{(link * 7 + i * 13) % 50}") for i, d in enumerate(DIMS)]


def set_keys(link):
    return [(k, f"{k}-{link % 50}") for k in SET_KINDS]


def packed_blob(link):
    counts = "|".join(f"{d}={v}:1:1" for d, v in values(link)).encode()
    return counts + b"\x01" * (SET_BYTES * len(SET_KINDS))


def connect(path):
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=NORMAL")
    c.execute("PRAGMA cache_size=-1024")
    return c


class BreakdownRows:
    name = "breakdown rows (11 a link's day)"

    def create(self, c):
        c.execute("CREATE TABLE b (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, "
                  "dimension TEXT NOT NULL, value TEXT NOT NULL, pv INTEGER NOT NULL DEFAULT 0, "
                  "uv INTEGER NOT NULL DEFAULT 0, "
                  "PRIMARY KEY (stat_date, url_map_id, dimension, value)) WITHOUT ROWID")
        c.execute("CREATE INDEX b_link ON b (url_map_id, dimension, stat_date)")

    def write(self, c, day, links):
        c.executemany("INSERT INTO b VALUES (?, ?, ?, ?, 1, 1) "
                      "ON CONFLICT DO UPDATE SET pv = pv + 1, uv = uv + 1",
                      ((day, link, d, v) for link in links for d, v in values(link)))


class SetRows:
    name = "set rows (6 a link's day)"

    def create(self, c):
        c.execute("CREATE TABLE s (url_map_id INTEGER NOT NULL, kind TEXT NOT NULL, "
                  "value TEXT NOT NULL, stat_date TEXT NOT NULL, members BLOB NOT NULL, "
                  "PRIMARY KEY (url_map_id, kind, value, stat_date))")
        c.execute("CREATE INDEX s_day ON s (stat_date)")

    def write(self, c, day, links):
        for i in range(0, len(links), CHUNK):
            keys = [(link, k, v, day) for link in links[i:i + CHUNK] for k, v in set_keys(link)]
            rows = ", ".join(["(?, ?, ?, ?)"] * len(keys))
            found = {}
            for link, k, v, members in c.execute(
                    f"WITH w(l, k, v, d) AS (VALUES {rows}) "
                    "SELECT s.url_map_id, s.kind, s.value, s.members FROM w JOIN s "
                    "ON s.url_map_id = w.l AND s.kind = w.k AND s.value = w.v AND s.stat_date = w.d",
                    [x for key in keys for x in key]):
                found[(link, k, v)] = members
            # A set of a visitor or two: the same size written back whether found or not.
            c.executemany("INSERT INTO s VALUES (?, ?, ?, ?, ?) "
                          "ON CONFLICT DO UPDATE SET members = excluded.members",
                          ((link, k, v, day, found.get((link, k, v), b"\x01" * SET_BYTES))
                           for link, k, v, day in keys))


class Packed:
    name = "packed: values and sets, 1 a link's day"

    def create(self, c):
        c.execute("CREATE TABLE p (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, "
                  "counts BLOB NOT NULL, PRIMARY KEY (stat_date, url_map_id)) WITHOUT ROWID")
        c.execute("CREATE INDEX p_link ON p (url_map_id, stat_date)")

    def write(self, c, day, links):
        found = {}
        for i in range(0, len(links), CHUNK):
            chunk = links[i:i + CHUNK]
            marks = ", ".join("?" * len(chunk))
            for link, counts in c.execute(
                    f"SELECT url_map_id, counts FROM p WHERE stat_date = ? AND url_map_id IN ({marks})",
                    [day, *chunk]):
                found[link] = counts
        c.executemany("INSERT INTO p VALUES (?, ?, ?) "
                      "ON CONFLICT DO UPDATE SET counts = excluded.counts",
                      ((day, link, found.get(link) or packed_blob(link)) for link in links))


def turn(c, layout, links):
    cpu, wall = time.process_time(), time.perf_counter()
    c.execute("BEGIN IMMEDIATE")
    layout.write(c, TODAY, links)
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(PASSIVE)")
    return time.process_time() - cpu, time.perf_counter() - wall


def median(xs):
    return sorted(xs)[len(xs) // 2]


def main():
    work = tempfile.mkdtemp(prefix="inklink-breakdown-")
    try:
        for n, layout in enumerate((BreakdownRows(), SetRows(), Packed())):
            path = os.path.join(work, f"{n}.db")
            c = connect(path)
            layout.create(c)
            per_day = EXIST // 3
            for d in range(3):
                for i in range(0, per_day, 20_000):
                    c.execute("BEGIN IMMEDIATE")
                    layout.write(c, f"2026-12-0{d + 1}", list(range(i, min(i + 20_000, per_day))))
                    c.execute("COMMIT")
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            random.seed(1)
            today = random.sample(range(100_000), TURN * TURNS)
            first = [turn(c, layout, sorted(today[t * TURN:(t + 1) * TURN])) for t in range(TURNS)]
            again = [turn(c, layout, sorted(random.sample(today, TURN))) for _ in range(TURNS)]
            c.close()
            figures = []
            for times in (first, again):
                cpu, wall = median([t[0] for t in times]), median([t[1] for t in times])
                figures.append(f"{cpu * 1e6 / TURN:.1f} µs CPU a link's day ({wall * 1e3:.0f} ms wall a turn)")
            print(f"{layout.name}: new {figures[0]}; counted before {figures[1]}; "
                  f"file {os.path.getsize(path) / 1e6:.0f} MB")
    finally:
        for name in os.listdir(work):
            os.remove(os.path.join(work, name))
        os.rmdir(work)


if __name__ == "__main__":
    main()
