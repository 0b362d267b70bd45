#!/usr/bin/env python3
"""A link's day's breakdown values and its packed day sets: two rows or one (SQLite alone).

After `breakdown_layout.py`: the values (a JSON text) and the sets (a blob of about 150 bytes)
of each of a turn's links' days, written three ways with the server's pragmas, over 300,000
links' days of the days before: two tables (each keyed by day and link, WITHOUT ROWID, with an
index by link), each row read and written back; one table holding both, written by two
upserts; one table, one upsert of both. Medians of eight turns of 10,000 links' days, CPU a
link's day, every one new, then every one counted before.

    python3 bench/packed_row.py
"""
import os
import random
import sys
import tempfile

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import breakdown_layout as bl  # noqa: E402

VALS = lambda link: ('[' + ','.join(f'["{d}","{v}",1,1]' for d, v in bl.values(link)) + ']')
SETS = lambda link: b"\x01" * 150

def read(c, table, col, day, chunk):
    marks = ", ".join("?" * len(chunk))
    return dict(c.execute(f"SELECT url_map_id, {col} FROM {table} WHERE stat_date = ? AND url_map_id IN ({marks})", [day, *chunk]))

class Two:
    name = "two tables (values, pack)"
    def create(self, c):
        c.execute("CREATE TABLE v (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, vals TEXT NOT NULL, PRIMARY KEY (stat_date, url_map_id)) WITHOUT ROWID")
        c.execute("CREATE INDEX v_link ON v (url_map_id, stat_date)")
        c.execute("CREATE TABLE p (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, apart INTEGER NOT NULL, members BLOB NOT NULL, PRIMARY KEY (stat_date, url_map_id)) WITHOUT ROWID")
        c.execute("CREATE INDEX p_link ON p (url_map_id, stat_date)")
    def write(self, c, day, links):
        for i in range(0, len(links), 500):
            chunk = links[i:i+500]
            fv = read(c, 'v', 'vals', day, chunk)
            read(c, 'p', 'members', day, chunk)
            c.executemany("INSERT INTO v VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET vals = excluded.vals", ((day, l, fv.get(l) or VALS(l)) for l in chunk))
        for i in range(0, len(links), 500):
            chunk = links[i:i+500]
            c.executemany("INSERT INTO p VALUES (?, ?, 0, ?) ON CONFLICT DO UPDATE SET apart = excluded.apart, members = excluded.members", ((day, l, SETS(l)) for l in chunk))

class OneTwoWrites:
    name = "one table, two upserts"
    def create(self, c):
        c.execute("CREATE TABLE v (stat_date TEXT NOT NULL, url_map_id INTEGER NOT NULL, vals TEXT NOT NULL DEFAULT '[]', apart INTEGER NOT NULL DEFAULT 0, members BLOB NOT NULL DEFAULT X'', PRIMARY KEY (stat_date, url_map_id)) WITHOUT ROWID")
        c.execute("CREATE INDEX v_link ON v (url_map_id, stat_date)")
    def write(self, c, day, links):
        for i in range(0, len(links), 500):
            chunk = links[i:i+500]
            fv = read(c, 'v', 'vals', day, chunk)
            read(c, 'v', 'members', day, chunk)
            c.executemany("INSERT INTO v (stat_date, url_map_id, vals) VALUES (?, ?, ?) ON CONFLICT DO UPDATE SET vals = excluded.vals", ((day, l, fv.get(l) or VALS(l)) for l in chunk))
        for i in range(0, len(links), 500):
            chunk = links[i:i+500]
            c.executemany("INSERT INTO v (stat_date, url_map_id, apart, members) VALUES (?, ?, 0, ?) ON CONFLICT DO UPDATE SET apart = excluded.apart, members = excluded.members", ((day, l, SETS(l)) for l in chunk))

class OneOneWrite:
    name = "one table, one upsert"
    create = OneTwoWrites.create
    def write(self, c, day, links):
        for i in range(0, len(links), 500):
            chunk = links[i:i+500]
            fv = read(c, 'v', 'vals', day, chunk)
            c.executemany("INSERT INTO v (stat_date, url_map_id, vals, apart, members) VALUES (?, ?, ?, 0, ?) ON CONFLICT DO UPDATE SET vals = excluded.vals, apart = excluded.apart, members = excluded.members", ((day, l, fv.get(l) or VALS(l), SETS(l)) for l in chunk))

def main():
    work = tempfile.mkdtemp(prefix="inklink-packed-")
    for n, layout in enumerate((Two(), OneTwoWrites(), OneOneWrite())):
        path = os.path.join(work, f"{n}.db")
        c = bl.connect(path); layout.create(c)
        per_day = bl.EXIST // 3
        for d in range(3):
            for i in range(0, per_day, 20_000):
                c.execute("BEGIN IMMEDIATE"); layout.write(c, f"2026-12-0{d + 1}", list(range(i, min(i + 20_000, per_day)))); c.execute("COMMIT")
        c.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        random.seed(1)
        today = random.sample(range(100_000), bl.TURN * bl.TURNS)
        first = [bl.turn(c, layout, sorted(today[t * bl.TURN:(t + 1) * bl.TURN])) for t in range(bl.TURNS)]
        again = [bl.turn(c, layout, sorted(random.sample(today, bl.TURN))) for _ in range(bl.TURNS)]
        c.close()
        f = [f"{bl.median([t[0] for t in ts]) * 1e6 / bl.TURN:.1f} µs" for ts in (first, again)]
        print(f"{layout.name}: new {f[0]}; again {f[1]}; file {os.path.getsize(path)/1e6:.0f} MB", flush=True)
        os.remove(path)
    os.rmdir(work)


if __name__ == "__main__":
    main()
