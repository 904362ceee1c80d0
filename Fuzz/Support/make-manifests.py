#!/usr/bin/env python3
"""Seed manifests for the backup-manifest fuzz target (scripts/fuzz): writes into the folder
given a Manifest.db (whole, and with its -wal appended), a Manifest.mbdb and an MBFile archive."""
import hashlib, os, plistlib, sqlite3, struct, sys

out = sys.argv[1]
rows = [
    ("HomeDomain", "Library", 2, None),
    ("HomeDomain", "Library/Preferences/com.apple.x.plist", 1, None),
    ("AppDomainGroup-group.com.apple.notes", "NoteStore.sqlite", 1, None),
    ("HomeDomain", "Library/link", 4, "note.txt"),
    ("HomeDomain", "../../escape.txt", 1, None),
    ("HomeDomain", "/etc/passwd", 1, None),
    ("..", "x.txt", 1, None),
    ("HomeDomain", "Library/" + "l" * 300, 1, None),
]


def archive(path, target, flags):
    """An MBFile as NSKeyedArchiver writes it."""
    objects = ["$null", {"$class": plistlib.UID(3), "RelativePath": plistlib.UID(2), "Size": 7,
                         "Mode": 0o40755 if flags == 2 else 0o120777 if flags == 4 else 0o100644,
                         "LastModified": 1638559935, "Birth": 1638559935, "UserID": 501, "GroupID": 501,
                         "InodeNumber": 123456, "ProtectionClass": 3, "Flags": 0}, path,
               {"$classname": "MBFile", "$classes": ["MBFile", "NSObject"]}]
    if target is not None:
        objects[1]["Target"] = plistlib.UID(4)
        objects.append(target)
    return plistlib.dumps({"$version": 100000, "$archiver": "NSKeyedArchiver", "$top": {"root": plistlib.UID(1)},
                           "$objects": objects}, fmt=plistlib.FMT_BINARY)


def file_id(domain, path):
    return hashlib.sha1(f"{domain}-{path}".encode()).hexdigest()


for mode in ("delete", "wal"):
    path = os.path.join(out, "work.db")
    for suffix in ("", "-wal", "-shm"):
        if os.path.exists(path + suffix):
            os.remove(path + suffix)
    db = sqlite3.connect(path, isolation_level=None)
    db.execute("PRAGMA page_size = 512")
    db.execute("PRAGMA journal_mode = " + mode)
    db.execute("PRAGMA wal_autocheckpoint = 0")
    db.execute("CREATE TABLE Files (fileID TEXT PRIMARY KEY, domain TEXT, relativePath TEXT, flags INTEGER, file BLOB)")
    db.execute("CREATE INDEX FilesDomainIdx ON Files(domain)")
    for domain, relative, flags, target in rows:
        db.execute("INSERT INTO Files VALUES (?,?,?,?,?)",
                   (file_id(domain, relative), domain, relative, flags, archive(relative, target, flags)))
    # A duplicate path under another file ID, and a file ID that is a path.
    db.execute("INSERT INTO Files VALUES (?,?,?,?,?)", ("0" * 40, "HomeDomain", "Library/link", 1, None))
    db.execute("INSERT INTO Files VALUES (?,?,?,?,?)", ("../../../../etc/passwd", "HomeDomain", "Library/o", 1, None))
    data = open(path, "rb").read()
    if os.path.exists(path + "-wal"):
        data += open(path + "-wal", "rb").read()
    open(os.path.join(out, "Manifest.db-" + mode), "wb").write(data)
    db.close()
for suffix in ("", "-wal", "-shm"):
    if os.path.exists(path + suffix):
        os.remove(path + suffix)

mbdb = bytearray(b"mbdb\x05\x00")
for domain, relative, flags, target in rows:
    for text in (domain, relative, target, None, None):
        if text is None:
            mbdb += b"\xff\xff"
        else:
            mbdb += struct.pack(">H", len(text.encode())) + text.encode()
    mode = 0o40755 if flags == 2 else 0o120777 if flags == 4 else 0o100644
    mbdb += struct.pack(">HQIIIIIQBB", mode, 7, 501, 501, 1400000000, 1400000000, 1400000000, 7, 4, 0)
open(os.path.join(out, "Manifest.mbdb"), "wb").write(bytes(mbdb))
open(os.path.join(out, "MBFile"), "wb").write(archive("Library/link", "note.txt", 4))
