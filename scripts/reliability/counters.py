#!/usr/bin/env python3
"""Counters through a storefs mount: writers that each increment their own counter and fsync
every write, readers that watch the counters, and optionally another process writing another
column of the same rows with sqlite3 meanwhile. Prints one JSON object with what happened.

Each writer owns one object's integer attribute (ENTITY/pKEY/ATTRIBUTE). An increment reads the
value, writes value+1 with O_TRUNC and fsyncs; a write counts only once fsync returned 0. An fsync
error means storefs did not apply the value and never will (the value is taken back), so the
writer reads again and retries: the final values must equal the increments exactly.

Readers read every counter in a loop until the writers are done: every read must be a whole
integer (never empty, never torn) and a counter must never go backwards.
"""
import argparse, json, os, sqlite3, sys, threading, time

def main():
    p = argparse.ArgumentParser()
    p.add_argument("mount")
    p.add_argument("--entity", default="Employee")
    p.add_argument("--attribute", default="badgeNumber")
    p.add_argument("--keys", required=True, help="comma-separated object keys, one per writer")
    p.add_argument("--increments", type=int, default=200)
    p.add_argument("--readers", type=int, default=0)
    p.add_argument("--store", help="the store file, for --external")
    p.add_argument("--external", help="TABLE.COLUMN another process sets on the same rows meanwhile")
    a = p.parse_args()
    keys = [int(k) for k in a.keys.split(",")]
    paths = {k: f"{a.mount}/{a.entity}/p{k}/{a.attribute}" for k in keys}
    result = {"writes": 0, "retries": 0, "errors": {}, "reads": 0, "badReads": 0, "backwards": 0, "external": 0}
    lock = threading.Lock()
    done = threading.Event()

    def note(field, value=1):
        with lock:
            result[field] += value

    def error(kind, e):
        with lock:
            name = f"{kind}:{getattr(e, 'errno', '?')}"
            result["errors"][name] = result["errors"].get(name, 0) + 1

    def writer(key):
        path = paths[key]
        done_here = 0
        attempts = 0
        while done_here < a.increments and attempts < a.increments * 20:
            attempts += 1
            try:
                with open(path, "rb") as f:
                    value = int(f.read().decode().strip())
            except Exception as e:
                error("read", e)
                continue
            fd = os.open(path, os.O_WRONLY | os.O_TRUNC)
            try:
                os.write(fd, f"{value + 1}\n".encode())
                os.fsync(fd)
                done_here += 1
                note("writes")
            except OSError as e:
                note("retries")
                error("fsync", e)
            finally:
                try:
                    os.close(fd)
                except OSError as e:
                    error("close", e)

    def reader():
        last = {}
        while not done.is_set():
            for key, path in paths.items():
                try:
                    with open(path, "rb") as f:
                        text = f.read().decode()
                    value = int(text)  # "7\n": int() takes the newline, refuses empty or torn text
                except Exception:
                    note("badReads")
                    continue
                note("reads")
                if value < last.get(key, value):
                    note("backwards")
                last[key] = value

    def external():
        table, column = a.external.split(".")
        db = sqlite3.connect(a.store, timeout=30)
        n = 0
        while not done.is_set():
            n += 1
            try:
                db.execute(f"UPDATE {table} SET {column} = ? WHERE Z_PK IN ({','.join(map(str, keys))})", (n,))
                db.commit()
                note("external")
            except sqlite3.Error as e:
                error("external", e)
            time.sleep(0.01)
        result["externalLast"] = n
        db.close()

    writers = [threading.Thread(target=writer, args=(k,)) for k in keys]
    others = [threading.Thread(target=reader) for _ in range(a.readers)]
    if a.external:
        others.append(threading.Thread(target=external))
    started = time.time()
    for t in others + writers:
        t.start()
    for t in writers:
        t.join()
    done.set()
    for t in others:
        t.join()
    result["seconds"] = round(time.time() - started, 2)
    final = {}
    for key, path in paths.items():
        with open(path, "rb") as f:
            final[str(key)] = int(f.read().decode())
    result["final"] = final
    print(json.dumps(result, sort_keys=True))

if __name__ == "__main__":
    sys.exit(main())
