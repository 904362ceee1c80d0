#!/usr/bin/env python3
"""Builds Attachments.sqlite and its .Attachments_SUPPORT/_EXTERNAL_DATA folder: a store in Core
Data's SQLite layout for Attachments.xcdatamodel, whose attribute Attachment.data allows external
storage, holding values in each of the forms Core Data's external storage uses.

The format is the one three independent public readers of real app stores describe (see
README.md); it is not verified against Core Data itself. Run from this folder:
    python3 make-fixture.py
The output is deterministic (fixed UUIDs, keys and bytes), so running it again changes nothing.
"""
import os
import plistlib
import shutil
import sqlite3

HERE = os.path.dirname(os.path.abspath(__file__))
STORE = os.path.join(HERE, "Attachments.sqlite")
SUPPORT = os.path.join(HERE, ".Attachments_SUPPORT")
EXTERNAL = os.path.join(SUPPORT, "_EXTERNAL_DATA")
STORE_UUID = "5A0B3B1E-7C42-4F4B-9A8E-3C1D2E4F5A6B"


def pattern(size, seed):
    """Deterministic bytes that do not start with a marker byte by accident."""
    return bytes((seed + i * 31 + (i >> 8) * 7) % 251 + 3 for i in range(size))


def main():
    for path in (STORE, STORE + "-wal", STORE + "-shm", STORE + "-journal"):
        if os.path.exists(path):
            os.remove(path)
    shutil.rmtree(SUPPORT, ignore_errors=True)
    os.makedirs(EXTERNAL)

    external = {
        "3": ("0E0C1A7B-7D4B-4C1E-8F53-2B8A3C9D0E11", pattern(129 * 1024, 3)),
        "4": ("9F4E2D1C-0B3A-4E5F-8A7B-6C5D4E3F2A10", pattern(300 * 1024, 4)),
    }
    for uuid, data in external.values():
        with open(os.path.join(EXTERNAL, uuid), "wb") as f:
            f.write(data)

    db = sqlite3.connect(STORE)
    db.execute("PRAGMA auto_vacuum = 2")
    db.execute("PRAGMA journal_mode = DELETE")
    db.executescript("""
        CREATE TABLE ZATTACHMENT ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZFOLDER INTEGER, ZNAME VARCHAR, ZDATA BLOB, ZTHUMBNAIL BLOB );
        CREATE TABLE ZFOLDER ( Z_PK INTEGER PRIMARY KEY, Z_ENT INTEGER, Z_OPT INTEGER, ZTITLE VARCHAR );
        CREATE TABLE Z_PRIMARYKEY (Z_ENT INTEGER PRIMARY KEY, Z_NAME VARCHAR, Z_SUPER INTEGER, Z_MAX INTEGER);
        CREATE TABLE Z_METADATA (Z_VERSION INTEGER PRIMARY KEY, Z_UUID VARCHAR(255), Z_PLIST BLOB);
        CREATE INDEX ZATTACHMENT_ZFOLDER_INDEX ON ZATTACHMENT (ZFOLDER);
    """)
    db.execute("INSERT INTO Z_PRIMARYKEY VALUES (1, 'Attachment', 0, 8), (2, 'Folder', 0, 1)")
    metadata = {
        "NSStoreType": "SQLite",
        "NSStoreModelVersionHashesVersion": 3,
        "NSStoreModelVersionIdentifiers": [""],
        "NSPersistenceFrameworkVersion": 1344,
        "_NSAutoVacuumLevel": "2",
    }
    db.execute("INSERT INTO Z_METADATA VALUES (1, ?, ?)", (STORE_UUID, plistlib.dumps(metadata, fmt=plistlib.FMT_BINARY)))
    db.execute("INSERT INTO ZFOLDER VALUES (1, 2, 1, 'Inbox')")
    rows = [
        # key, name, data column, thumbnail column
        (1, "tiny", b"\x01" + b"tiny value", None),
        (2, "inline", b"\x01" + pattern(127 * 1024, 2), None),
        (3, "external", b"\x02" + external["3"][0].encode(), None),
        (4, "large", b"\x02" + external["4"][0].encode(), None),
        (5, "dangling", b"\x02" + b"7B1D3C5E-0000-4000-8000-000000000005", None),
        (6, "unmarked", b"\x07" + b"written without a marker", None),
        # A thumbnail does not allow external storage: bytes that look like a reference are data.
        (7, "lookalike", None, b"\x02" + external["3"][0].encode()),
        (8, "empty", None, None),
    ]
    for key, name, data, thumbnail in rows:
        db.execute("INSERT INTO ZATTACHMENT VALUES (?, 1, 1, 1, ?, ?, ?)", (key, name, data, thumbnail))
    db.commit()
    db.execute("VACUUM")
    db.close()


if __name__ == "__main__":
    main()
