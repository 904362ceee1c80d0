#!/usr/bin/env python3
"""storefs's recovered records against sqlite-dissect's, on the same files (issue 37).

Ground-truth stores are made here: the sample company (`storefs sample`) and copies of the
corpus's Notes and Photos stores, changed with plain SQL (secure_delete off) in known ways, in
rollback-journal mode (changes checkpointed into the database file) and in WAL mode (the log
kept). What existed is taken before each change: `storefs export` of every changed entity (the
text forms `storefs export --recovered` writes) and the raw rows (what sqlite-dissect prints).

For each file, each tool's output is sorted into
  true:  a row version that was deleted or superseded here (counted once per distinct version);
  known: a row the pristine file already remembered or held (a row a trigger changed is a version
         that existed), or a live row (sqlite-dissect lists those);
  false: anything else: a row that never existed.
A partial record of storefs's (`@partial`: its end was overwritten; `@missing` names what was lost)
is true when a deleted or superseded version has every value it kept and differs from it only in
what it lists as missing; it counts a version not counted yet (else it is the same version found
again). sqlite-dissect's rows are given the same reading: a row cut short (each value equal to
a row's, or a truncation of it, or empty: its carving of a record whose end was overwritten, the
lost values shown empty) that holds a value besides Z_ENT and Z_OPT is true when it is a deleted
or superseded version cut short (counting a version not counted yet), known when it is a known
row cut short; its false rows are the rest. Its figures say how many of its true rows are cut
short.
The corpus's unchanged real stores have no ground truth: their counts are records found; of
sqlite-dissect's rows that are not live, how many are live rows cut short, and how many of the
others storefs has no record of (a record of the same table whose texts hold every text of the
row: equal, or the row's text a truncation of it; rows with no text are counted apart).

sqlite-dissect 1.0.0 stops with an AttributeError in its carving of unallocated space under
Python 3.11 (`append_byte_strings` is handed a bytearray); it is run through a shim that converts
that argument to bytes and changes nothing else (SHIM below). Its CSV export fails on an empty
value (`value[0]`), so its SQLite export is read. Exit statuses other than 0 are printed beside
its figures. Its run is `-c -f` (carving, freelist
carving).

Usage: scripts/bench/recovery.py STOREFS_BINARY CORPUS_DIR WORK_DIR
"""
import csv, json, os, shutil, sqlite3, subprocess, sys, time

STOREFS, CORPUS, WORK = sys.argv[1], sys.argv[2], sys.argv[3]

SHIM = r'''
import sys
import sqlite_dissect.utilities as u
# Modules bound the function by name when the package loaded: its code is replaced in place.
def fixed(str1, str2):
    if not isinstance(str1, bytes):
        str1 = bytes(str1) if isinstance(str1, bytearray) else str1.encode()
    if not isinstance(str2, bytes):
        str2 = bytes(str2) if isinstance(str2, bytearray) else str2.encode()
    return f"{str1}{str2}"
u.append_byte_strings.__code__ = fixed.__code__
from sqlite_dissect.entrypoint import cli
sys.exit(cli())
'''


def timed(command, stdout=None):
    """Runs command; returns (seconds, max RSS in MB, exit status)."""
    started = time.monotonic()
    result = subprocess.run(["/usr/bin/time", "-f", "%M"] + command, stdout=stdout, stderr=subprocess.PIPE,
                            timeout=1800)
    seconds = time.monotonic() - started
    lines = result.stderr.decode(errors="replace").strip().splitlines()
    try:
        rss = int(lines[-1]) / 1024
    except (ValueError, IndexError):
        rss = float("nan")
    return seconds, rss, result.returncode


def storefs_export(store, entity):
    out = subprocess.run([STOREFS, "export", store, "--entity", entity], capture_output=True, timeout=600)
    return [json.loads(line) for line in out.stdout.decode().splitlines() if line.strip()]


def fingerprint(record):
    """A record's entity and attribute texts (no relationships, no bookkeeping)."""
    entity = record["@entity"]
    values = tuple(sorted((k, v) for k, v in record.items()
                          if not k.startswith("@") and isinstance(v, str) and not v.startswith("x-coredata://")))
    return entity, values


def partial_matches(record, fingerprints):
    """The fingerprints a partial storefs record can be: every value it kept, and nothing else
    but what it lists as missing."""
    entity, values = fingerprint(record)
    kept = dict(values)
    missing = set(record.get("@missing", []))
    result = []
    for other in fingerprints:
        if other[0] != entity:
            continue
        theirs = dict(other[1])
        if all(theirs.get(k) == v for k, v in kept.items()) and set(theirs) - set(kept) <= missing:
            result.append(other)
    return result


def cut_short(row, existing):
    """Whether a raw row is an existing row cut short: each value equal to the existing row's,
    a truncation of it, or empty."""
    for other in existing:
        if all(a == b or (a == "" and b != "") or (b.startswith(a) and len(a) < len(b)) for a, b in zip(row, other)):
            return True
    return False


def cut_short_of(row, columns, existing):
    """The rows of `existing` a raw row is a cut-short copy of; none when it holds no value
    besides Z_ENT and Z_OPT."""
    if not any(v != "" for c, v in zip(columns, row) if c not in ("Z_ENT", "Z_OPT")):
        return []
    return [other for other in existing if cut_short(row, [other])]


def is_number(text):
    try:
        float(text)
        return True
    except ValueError:
        return False


def texts_of(record):
    """A storefs record's text values (attributes), for matching a raw row without ground truth."""
    return [v for k, v in record.items() if not k.startswith("@") and isinstance(v, str)]


def raw_rows(db, table):
    db = getattr(db, "db", db)
    columns = [r[1] for r in db.execute(f'PRAGMA table_info("{table}")')]
    types = {r[1]: (r[2] or "").upper() for r in db.execute(f'PRAGMA table_info("{table}")')}
    kept = [c for c in columns if c != "Z_PK" and not any(t in types[c] for t in ("FLOAT", "TIMESTAMP", "DECIMAL", "BLOB"))]
    rows = set()
    for row in db.execute(f'SELECT {",".join(chr(34) + c + chr(34) for c in kept)} FROM "{table}"'):
        rows.add(tuple("" if v is None else str(v) for v in row))
    return kept, rows


def dissect_rows(out, table, kept):
    """Every row sqlite-dissect wrote for a table (its SQLite export), as raw fingerprints."""
    rows = set()
    files = [f for f in os.listdir(out) if f.endswith(".db3")] if os.path.isdir(out) else []
    if not files:
        return rows
    db = sqlite3.connect(os.path.join(out, files[0]))
    try:
        # Its export keeps text as BLOBs.
        for row in db.execute(f'SELECT {",".join(chr(34) + c + chr(34) for c in kept)} FROM "{table}"'):
            rows.add(tuple("" if v is None else v.decode("utf-8", "replace") if isinstance(v, bytes) else str(v)
                           for v in row))
    except sqlite3.Error:
        pass
    db.close()
    return rows


class Scenario:
    def __init__(self, name, source, tables, entities):
        self.name, self.source, self.tables, self.entities = name, source, tables, entities
        self.folder = os.path.join(WORK, name)
        shutil.rmtree(self.folder, ignore_errors=True)
        os.makedirs(self.folder)
        self.store = os.path.join(self.folder, "work.sqlite")
        self.pristine = os.path.join(self.folder, "pristine.sqlite")
        if source == "sample":
            subprocess.run([STOREFS, "sample", "--objects", "2000", self.store], check=True, capture_output=True)
        else:
            for suffix in ("", "-wal"):
                if os.path.exists(source + suffix):
                    shutil.copy(source + suffix, self.store + suffix)
        for suffix in ("", "-wal"):
            if os.path.exists(self.store + suffix):
                shutil.copy(self.store + suffix, self.pristine + suffix)
        self.gone_records = set()  # storefs fingerprints of deleted or superseded versions
        self.gone_raw = {t: set() for t in tables}
        self.live_raw = {t: set() for t in tables}
        self.seen_raw = {t: set() for t in tables}

    def snapshot(self, db):
        """What exists now, before a change: storefs's records and the raw rows."""
        records = {}
        for entity in self.entities:
            for r in storefs_export(self.store, entity):
                records[(r["@entity"], r["@uri"])] = r
        raw = {}
        for t in self.tables:
            raw[t] = raw_rows(db, t)
        return records, raw

    def changed(self, before, after):
        """Marks what `before` had and `after` does not as gone."""
        records_before, raw_before = before
        records_after, raw_after = after
        for key, record in records_before.items():
            if key not in records_after or fingerprint(records_after[key]) != fingerprint(record):
                self.gone_records.add(fingerprint(record))
        for t in self.tables:
            kept, rows = raw_before[t]
            self.seen_raw[t] |= rows
            self.gone_raw[t] |= rows - raw_after[t][1]
            self.columns = getattr(self, "columns", {})
            self.columns[t] = kept

    def finish(self, db, keep_log):
        for t in self.tables:
            kept, rows = raw_rows(db, t)
            self.live_raw[t] = rows
            self.seen_raw[t] |= rows
        if not keep_log:
            db.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        evidence = os.path.join(self.folder, "evidence")
        os.makedirs(evidence)
        self.evidence = os.path.join(evidence, "store.sqlite")
        for suffix in ("", "-wal"):
            if os.path.exists(self.store + suffix) and (suffix == "" or keep_log):
                shutil.copy(self.store + suffix, self.evidence + suffix)
        if not keep_log and os.path.exists(self.evidence + "-wal"):
            os.remove(self.evidence + "-wal")
        db.close()


class Connection:
    """A connection whose statements run with Core Data's trigger functions stubbed (they fire
    on the corpus's Photos store), each added when SQLite first asks for it."""

    def __init__(self, db):
        self.db = db

    def execute(self, sql, arguments=()):
        while True:
            try:
                return self.db.execute(sql, arguments)
            except sqlite3.OperationalError as error:
                text = str(error)
                if not text.startswith("no such function: "):
                    raise
                self.db.create_function(text.split(": ", 1)[1], -1, lambda *a: None)
                if self.db.in_transaction and sql != "BEGIN":
                    continue

    def close(self):
        self.db.close()


def writer(path, mode):
    db = Connection(sqlite3.connect(path, isolation_level=None))
    db.execute("PRAGMA secure_delete = OFF")
    db.execute("PRAGMA wal_autocheckpoint = 0")
    if mode == "delete":
        db.execute("PRAGMA journal_mode = DELETE")
    return db


def scenarios():
    made = []
    # The sample company: a run of 300 people and 40 scattered ones deleted, 30 renamed; the
    # database file alone (rollback journal).
    s = Scenario("sample, journal DELETE", "sample", ["ZPERSON"], ["Person"])
    db = writer(s.store, "delete")
    before = s.snapshot(db)
    db.execute("BEGIN")
    db.execute("DELETE FROM ZPERSON WHERE Z_PK BETWEEN 401 AND 700")
    db.execute("DELETE FROM ZPERSON WHERE Z_PK % 29 = 5 AND Z_PK NOT BETWEEN 401 AND 700 AND Z_PK <= 1200")
    db.execute("UPDATE ZPERSON SET ZLASTNAME = ZLASTNAME || '-renamed', Z_OPT = Z_OPT + 1 WHERE Z_PK % 37 = 3 AND Z_PK <= 1110")
    db.execute("COMMIT")
    s.changed(before, s.snapshot(db))
    s.finish(db, keep_log=False)
    made.append(s)
    # The same in WAL mode, the log kept: two rounds of 30 renames and 20 deletions, each round a commit.
    s = Scenario("sample, WAL kept", "sample", ["ZPERSON"], ["Person"])
    db = writer(s.store, "wal")
    for round in (1, 2):
        before = s.snapshot(db)
        db.execute("BEGIN")
        db.execute(f"UPDATE ZPERSON SET ZLASTNAME = ZLASTNAME || '-r{round}', Z_OPT = Z_OPT + 1 WHERE Z_PK % 31 = {round} AND Z_PK <= 930")
        db.execute(f"DELETE FROM ZPERSON WHERE Z_PK IN (SELECT Z_PK FROM ZPERSON WHERE Z_PK % 43 = {round + 10} ORDER BY Z_PK LIMIT 20)")
        db.execute("COMMIT")
        s.changed(before, s.snapshot(db))
    s.finish(db, keep_log=True)
    made.append(s)
    notes = os.path.join(CORPUS, "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite")
    for keep in (True, False):
        s = Scenario(f"Notes, 2 notes deleted, {'WAL kept' if keep else 'checkpointed'}", notes,
                     ["ZICCLOUDSYNCINGOBJECT", "ZICNOTEDATA"], ["ICNote", "ICNoteData"])
        db = writer(s.store, "wal")
        for title in ("This note is in a folder", "This note has special formatting"):
            before = s.snapshot(db)
            db.execute("BEGIN")
            key = db.execute("SELECT Z_PK FROM ZICCLOUDSYNCINGOBJECT WHERE Z_ENT = 11 AND ZTITLE1 = ?", (title,)).fetchone()[0]
            db.execute("DELETE FROM ZICNOTEDATA WHERE ZNOTE = ?", (key,))
            db.execute("DELETE FROM ZICCLOUDSYNCINGOBJECT WHERE Z_PK = ?", (key,))
            db.execute("COMMIT")
            s.changed(before, s.snapshot(db))
        s.finish(db, keep_log=keep)
        made.append(s)
    photos = os.path.join(CORPUS, "RhetTbull_merge_photos_libraries_Photos.sqlite")
    s = Scenario("Photos, 3 assets deleted, 2 renamed, WAL kept", photos, ["ZGENERICASSET"], ["Asset"])
    db = writer(s.store, "wal")
    before = s.snapshot(db)
    db.execute("BEGIN")
    db.execute("DELETE FROM ZGENERICASSET WHERE Z_PK IN (SELECT Z_PK FROM ZGENERICASSET ORDER BY Z_PK LIMIT 3)")
    db.execute("UPDATE ZGENERICASSET SET ZFILENAME = 'renamed-' || ZFILENAME, Z_OPT = Z_OPT + 1 WHERE Z_PK IN (SELECT Z_PK FROM ZGENERICASSET ORDER BY Z_PK DESC LIMIT 2)")
    db.execute("COMMIT")
    s.changed(before, s.snapshot(db))
    s.finish(db, keep_log=True)
    made.append(s)
    return made


def run_storefs(store, folder):
    out = os.path.join(folder, "storefs.jsonl")
    with open(out, "wb") as f:
        seconds, rss, status = timed([STOREFS, "export", "--recovered", store], stdout=f)
    records = [json.loads(l) for l in open(out) if l.strip()]
    return records, seconds, rss, status


def run_dissect(store, folder):
    shim = os.path.join(WORK, "dissect-shim.py")
    with open(shim, "w") as f:
        f.write(SHIM)
    out = os.path.join(folder, "dissect")
    shutil.rmtree(out, ignore_errors=True)
    seconds, rss, status = timed([sys.executable, shim, store, "-c", "-f", "-e", "sqlite", "-d", out,
                                  "-l", "critical"], stdout=subprocess.DEVNULL)
    return out, seconds, rss, status


def ground_truth_rows():
    lines = ["| file | deleted or superseded | storefs: true (partial) / false / known | sqlite-dissect: true (cut short) / false / known (cut short) | storefs time, RSS | sqlite-dissect time, RSS |",
             "|---|---|---|---|---|---|"]
    for s in scenarios():
        # What the pristine file already remembered (storefs), for "known".
        pristine_records, _, _, _ = run_storefs(s.pristine, s.folder)
        # And every object the pristine file held: a change here (a trigger's update of another
        # entity's row) makes its earlier version a superseded one, which existed.
        everything = subprocess.run([STOREFS, "export", s.pristine], capture_output=True, timeout=600)
        # Partial records the pristine file remembered: the same again in the evidence is known.
        known_partial = {(fingerprint(r), tuple(r["@missing"])) for r in pristine_records if "@partial" in r}
        known_records = {fingerprint(r) for r in pristine_records if "@partial" not in r} | {
            fingerprint(json.loads(l)) for l in everything.stdout.decode().splitlines() if l.strip()}
        records, seconds, rss, status = run_storefs(s.evidence, s.folder)
        mine = {fingerprint(r) for r in records if "@partial" not in r}
        covered = mine & s.gone_records
        false = len(mine - s.gone_records - known_records)
        known = len((mine - s.gone_records) & known_records)
        partial_true = partial_false = 0
        for r in (r for r in records if "@partial" in r):
            versions = partial_matches(r, s.gone_records)
            if versions:
                new_versions = [v for v in versions if v not in covered]
                if new_versions:
                    covered.add(new_versions[0])
                    partial_true += 1
            elif partial_matches(r, known_records) or (fingerprint(r), tuple(r["@missing"])) in known_partial:
                known += 1
            else:
                partial_false += 1
                print(f"# {s.name}: a partial record that never existed: {json.dumps(r)[:400]}", file=sys.stderr)
        true = len(covered)
        false += partial_false
        out, dseconds, drss, dstatus = run_dissect(s.evidence, s.folder)
        dtrue = dknown = dfalse = dcut_true = dcut_known = 0
        for t in s.tables:
            rows = dissect_rows(out, t, s.columns[t])
            gone = s.gone_raw[t]
            dcovered = rows & gone
            dknown += len((rows - gone) & s.seen_raw[t])
            for row in sorted(rows - gone - s.seen_raw[t]):
                versions = cut_short_of(row, s.columns[t], gone)
                if versions:
                    new_versions = [v for v in versions if v not in dcovered]
                    if new_versions:
                        dcovered.add(new_versions[0])
                        dcut_true += 1
                elif cut_short_of(row, s.columns[t], s.seen_raw[t]):
                    dcut_known += 1
                else:
                    dfalse += 1
            dtrue += len(dcovered)
        dknown += dcut_known
        expected = len(s.gone_records)
        lines.append(f"| {s.name} | {expected} | {true} ({partial_true} partial) / {false} / {known} | "
                     f"{dtrue} ({dcut_true} cut short) / {dfalse} / {dknown} ({dcut_known} cut short)"
                     f"{'' if dstatus == 0 else f' (exit {dstatus})'} | {seconds:.2f} s, {rss:.0f} MB"
                     f"{'' if status == 0 else f' (exit {status})'} | {dseconds:.2f} s, {drss:.0f} MB |")
    return lines


def corpus_rows():
    lines = ["| corpus store (unchanged) | storefs: records (partial) | sqlite-dissect: rows not live (live rows cut short) / others storefs has no record of (rows with no text) | storefs time, RSS | sqlite-dissect time, RSS |",
             "|---|---|---|---|---|"]
    for name in sorted(os.listdir(CORPUS)):
        if not (name.endswith(".sqlite") or name.endswith(".store")):
            continue
        folder = os.path.join(WORK, "corpus", name)
        shutil.rmtree(folder, ignore_errors=True)
        os.makedirs(folder)
        store = os.path.join(folder, name)
        for suffix in ("", "-wal"):
            if os.path.exists(os.path.join(CORPUS, name) + suffix):
                shutil.copy(os.path.join(CORPUS, name) + suffix, store + suffix)
        records, seconds, rss, status = run_storefs(store, folder)
        out, dseconds, drss, dstatus = run_dissect(store, folder)
        # sqlite-dissect's rows that are not live rows of the (checkpointed) store.
        live = set()
        copy = os.path.join(folder, "live.sqlite")
        shutil.copy(store, copy)
        if os.path.exists(store + "-wal"):
            shutil.copy(store + "-wal", copy + "-wal")
        db = sqlite3.connect(copy)
        found = cut = lacking = textless = 0
        names = dict(db.execute("SELECT Z_ENT, Z_NAME FROM Z_PRIMARYKEY")) if db.execute(
            "SELECT 1 FROM sqlite_master WHERE name = 'Z_PRIMARYKEY'").fetchone() else {}
        for (table,) in db.execute("SELECT name FROM sqlite_master WHERE type = 'table' AND name LIKE 'Z%' AND name NOT LIKE 'Z\\_%' ESCAPE '\\'"):
            kept, rows = raw_rows(db, table)
            extra = dissect_rows(out, table, kept) - rows
            found += len(extra)
            for row in extra:
                if cut_short(row, rows):
                    cut += 1
                    continue
                # storefs's records of the row's entity (Z_ENT, when it survived).
                entity = names.get(int(row[0])) if kept[0] == "Z_ENT" and row[0].isdigit() else None
                mine = [texts_of(r) for r in records if entity is None or r["@entity"] == entity]
                texts = [v for v in row if v != "" and not is_number(v)]
                if not texts:
                    textless += 1
                elif not any(all(any(t == v or v.startswith(t) for v in theirs) for t in texts) for theirs in mine):
                    lacking += 1
                    print(f"# {name}: a row of sqlite-dissect's storefs has no record of: {table} {row}"[:600],
                          file=sys.stderr)
        db.close()
        partial = sum(1 for r in records if "@partial" in r)
        lines.append(f"| {name} | {len(records)} ({partial}){'' if status == 0 else f' (exit {status})'} | "
                     f"{found} ({cut}) / {lacking} ({textless})"
                     f"{'' if dstatus == 0 else f' (exit {dstatus})'} | {seconds:.2f} s, {rss:.0f} MB | {dseconds:.2f} s, {drss:.0f} MB |")
    return lines


if __name__ == "__main__":
    os.makedirs(WORK, exist_ok=True)
    print("\n".join(ground_truth_rows()))
    print()
    print("\n".join(corpus_rows()))
