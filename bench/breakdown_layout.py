#!/usr/bin/env python3
"""What the breakdowns' layout costs a counting turn over many links, on SQLite alone.

Over 100,000 links nearly every click of a burst is another link's day, and a turn writes each
link's day eleven breakdown rows (`visit_statistics_breakdown`: one per dimension and value,
WITHOUT ROWID, keyed by day, link, dimension and value, with the index by link). This writes the
same turns two ways, with the server's pragmas (WAL, synchronous NORMAL, a 1 MB page cache) and a
passive checkpoint after each turn, as counting does:

- rows: the table as it is, `INSERT … ON CONFLICT DO UPDATE SET pv = pv + 1, uv = uv + 1`;
- packed: one row a link's day holding all its values in one blob (about 250 bytes here), read
  and written back whole.

Each way: EXIST links' days on the days before, then eight turns of 10,000 new links' days of
today (every one new), then eight turns of 10,000 of those again (every one counted before).
Medians of the eight, CPU and wall. The Python side (building the tuples or the blob) is in the
figures, about 2.4 µs a link's day for the rows and 3.5 for a blob.

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
DIMS = ["country", "province", "city", "carrier", "browser", "os", "device", "referrer", "hour",
        "utm_source", "utm_campaign"]
TODAY = "2026-12-07"


def values(link):
    return [(d, f"{d}-{(link * 7 + i * 13) % 50}") for i, d in enumerate(DIMS)]


def blob(link):
    return "|".join(f"{d}={v}:1:1" for d, v in values(link)).encode()


def open_db(path, packed):
    c = sqlite3.connect(path, isolation_level=None)
    c.execute("PRAGMA journal_mode=WAL")
    c.execute("PRAGMA synchronous=NORMAL")
    c.execute("PRAGMA cache_size=-1024")
    if packed:
        c.execute("CREATE TABLE b (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, "
                  "counts BLOB NOT NULL, PRIMARY KEY (stat_date, url_map_id)) WITHOUT ROWID")
        c.execute("CREATE INDEX b_link ON b (url_map_id, stat_date)")
    else:
        c.execute("CREATE TABLE b (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, "
                  "dimension TEXT NOT NULL, value TEXT NOT NULL, pv INTEGER NOT NULL DEFAULT 0, "
                  "uv INTEGER NOT NULL DEFAULT 0, "
                  "PRIMARY KEY (stat_date, url_map_id, dimension, value)) WITHOUT ROWID")
        c.execute("CREATE INDEX b_link ON b (url_map_id, dimension, stat_date)")
    return c


def new_days(c, packed, day, links):
    if packed:
        c.executemany("INSERT INTO b VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET counts = excluded.counts",
                      ((day, link, blob(link)) for link in links))
    else:
        c.executemany("INSERT INTO b VALUES (?, ?, ?, ?, 1, 1) "
                      "ON CONFLICT DO UPDATE SET pv = pv + 1, uv = uv + 1",
                      ((day, link, d, v) for link in links for d, v in values(link)))


def days_again(c, packed, day, links):
    if not packed:
        return new_days(c, packed, day, links)
    old = {}
    for i in range(0, len(links), 500):
        chunk = links[i:i + 500]
        marks = ", ".join("?" * len(chunk))
        for link, counts in c.execute(
                f"SELECT url_map_id, counts FROM b WHERE stat_date = ? AND url_map_id IN ({marks})",
                [day, *chunk]):
            old[link] = counts
    # A real turn would add its counts into the blob; the same size is written back here.
    c.executemany("UPDATE b SET counts = ? WHERE stat_date = ? AND url_map_id = ?",
                  ((old[link], day, link) for link in links))


def turn(c, write, packed, links):
    cpu, wall = time.process_time(), time.perf_counter()
    c.execute("BEGIN IMMEDIATE")
    write(c, packed, TODAY, links)
    c.execute("COMMIT")
    c.execute("PRAGMA wal_checkpoint(PASSIVE)")
    return time.process_time() - cpu, time.perf_counter() - wall


def median(xs):
    return sorted(xs)[len(xs) // 2]


def main():
    work = tempfile.mkdtemp(prefix="inklink-breakdown-")
    try:
        for packed in (False, True):
            path = os.path.join(work, f"{'packed' if packed else 'rows'}.db")
            c = open_db(path, packed)
            per_day = EXIST // 3
            for d in range(3):
                for i in range(0, per_day, 20_000):
                    c.execute("BEGIN IMMEDIATE")
                    new_days(c, packed, f"2026-12-0{d + 1}", range(i, min(i + 20_000, per_day)))
                    c.execute("COMMIT")
            c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
            random.seed(1)
            today = random.sample(range(100_000), TURN * TURNS)
            first = [turn(c, new_days, packed, sorted(today[t * TURN:(t + 1) * TURN]))
                     for t in range(TURNS)]
            again = [turn(c, days_again, packed, sorted(random.sample(today, TURN)))
                     for _ in range(TURNS)]
            name = "packed" if packed else "rows  "
            for what, times in (("new links' days", first), ("links' days counted before", again)):
                cpu, wall = median([t[0] for t in times]), median([t[1] for t in times])
                print(f"{name}: a turn of {TURN} {what}: {cpu * 1e3:.0f} ms CPU "
                      f"({cpu * 1e6 / TURN:.1f} µs a link's day), {wall * 1e3:.0f} ms wall")
            c.close()
            print(f"{name}: file {os.path.getsize(path) / 1e6:.0f} MB")
    finally:
        for name in os.listdir(work):
            os.remove(os.path.join(work, name))
        os.rmdir(work)


if __name__ == "__main__":
    main()
