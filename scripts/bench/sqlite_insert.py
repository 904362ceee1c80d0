#!/usr/bin/env python3
"""SQLite's own speed on a store's rows, the reference for storefs's bulk writes.

Reads every row of SOURCE into memory, creates DESTINATION with the same tables and indexes, then
inserts the rows with one prepared statement per table (executemany) in one transaction, and
prints the seconds the inserts and the commit took. Asserts nothing.

Usage: sqlite_insert.py SOURCE DESTINATION
"""
import os
import sqlite3
import sys
import time

source, destination = sys.argv[1], sys.argv[2]
if os.path.exists(destination):
    sys.exit(f"{destination} exists")
read = sqlite3.connect(source)
tables = read.execute(
    "SELECT name, sql FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'").fetchall()
indexes = [sql for (sql,) in read.execute("SELECT sql FROM sqlite_master WHERE type = 'index' AND sql IS NOT NULL")]
rows = {name: read.execute(f'SELECT * FROM "{name}"').fetchall() for name, _ in tables}
write = sqlite3.connect(destination, isolation_level=None)
write.execute("PRAGMA journal_mode = WAL")
for _, sql in tables:
    write.execute(sql)
for sql in indexes:
    write.execute(sql)
start = time.perf_counter()
write.execute("BEGIN")
count = 0
for name, table_rows in rows.items():
    if table_rows:
        placeholders = ", ".join("?" * len(table_rows[0]))
        write.executemany(f'INSERT INTO "{name}" VALUES ({placeholders})', table_rows)
        count += len(table_rows)
write.execute("COMMIT")
print(f"{time.perf_counter() - start:.3f} {count}")
