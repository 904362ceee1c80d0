import Foundation
import Synchronization
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// flock(2) and fcntl locks on two mounts of one PostgreSQL store, through the kernel, held in
/// the server (advisory locks): a lock through one mount excludes the other's processes as it
/// does this mount's, F_GETLK sees it, a blocked lock is interrupted by a signal, a mount killed
/// with SIGKILL lets go of its locks, and 2 mounts × 4 writers incrementing one counter under
/// `flock` lose no increment.
@Suite(.serialized) struct PostgresLockMountTests {
    typealias URLMount = PostgresMountTests.URLMount

    /// A process holding a lock until it is killed: flock (`LOCK_EX`) or POSIX (`lockf`, F_SETLKW
    /// on the whole file). Says "held" once it holds it.
    final class Holder {
        let process = Process()
        private let output = Pipe()

        init(_ path: String, posix: Bool = false) throws {
            let take =
                posix
                ? "f = open(p, 'r+'); fcntl.lockf(f, fcntl.LOCK_EX)"
                : "f = os.open(p, os.O_RDONLY); fcntl.flock(f, fcntl.LOCK_EX)"
            process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
            process.arguments = [
                "python3", "-c",
                "import fcntl, os, sys, time; p = sys.argv[1]; \(take); print('held', flush=True); time.sleep(120)",
                path
            ]
            process.standardOutput = output
            try process.run()
        }

        /// Whether it said it holds the lock within `seconds`.
        func holds(within seconds: Double = 10) -> Bool {
            let said = Mutex(false)
            let handle = output.fileHandleForReading
            let reader = Thread {
                let data = handle.availableData
                said.withLock { $0 = String(decoding: data, as: UTF8.self).contains("held") }
            }
            reader.start()
            let deadline = Date().addingTimeInterval(seconds)
            while Date() < deadline {
                if said.withLock({ $0 }) { return true }
                Thread.sleep(forTimeInterval: 0.02)
            }
            return false
        }

        func kill() {
            if process.isRunning { Glibc.kill(process.processIdentifier, SIGKILL) }
            process.waitUntilExit()
        }
    }

    /// `flock` without waiting: 0 when it got the lock, 75 when another holder has it.
    func tryFlock(_ path: String, shared: Bool = false) throws -> Int32 {
        try run("flock", [shared ? "-s" : "-x", "-n", "-E", "75", path, "true"]).status
    }

    /// What F_GETLK answers through `path` for a write lock: "F_UNLCK", "F_RDLCK" or "F_WRLCK";
    /// and whether F_SETLK of a write lock was refused (EAGAIN).
    func posixProbe(_ path: String) throws -> String {
        let script = """
            import fcntl, os, struct, sys
            fd = os.open(sys.argv[1], os.O_RDWR)
            got = struct.unpack('hhqqi', fcntl.fcntl(fd, fcntl.F_GETLK, struct.pack('hhqqi', fcntl.F_WRLCK, 0, 0, 0, 0)))[0]
            names = {fcntl.F_UNLCK: 'F_UNLCK', fcntl.F_RDLCK: 'F_RDLCK', fcntl.F_WRLCK: 'F_WRLCK'}
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                refused = 'granted'
            except BlockingIOError:
                refused = 'refused'
            print(names.get(got, str(got)), refused)
            """
        return try run("python3", ["-c", script, path]).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    /// flock(1) with `options` running `sleep 60` under the lock; the command writes its pid (that
    /// of the `sleep` it becomes) to `pidFile` so the test can end it, and no pipe is shared with
    /// it, so nothing here waits for it to end. The sleep's pid is 0 when it did not start in 10 s.
    func flockRunningSleep(_ options: [String], pidFile: String) throws -> (Process, Int32) {
        let locker = Process()
        locker.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        locker.arguments = options + ["-c", "echo $$ > '\(pidFile)'; exec sleep 60"]
        locker.standardOutput = FileHandle.nullDevice
        locker.standardError = FileHandle.nullDevice
        try locker.run()
        var sleeper: Int32 = 0
        _ = seconds(until: {
            sleeper =
                Int32(
                    (try? String(contentsOfFile: pidFile, encoding: .utf8))?.trimmingCharacters(
                        in: .whitespacesAndNewlines) ?? "") ?? 0
            return sleeper > 0
        })
        return (locker, sleeper)
    }

    /// Two mounts of a fresh sample store of `objects` objects on the shared server (the first
    /// with `options`), and the name of an employee's folder both show.
    func twoMounts(of name: String, objects: Int, firstOptions: [String] = []) throws -> (URLMount, URLMount, String) {
        let url = try PostgresMountTests.sampleStore(objects: objects, server: try PostgresServer.shared(), name: name)
        let first = try URLMount(url, options: firstOptions)
        let second = try URLMount(url)
        let employee = try #require(try run("ls", [first.path + "/Employee"]).lines.first)
        return (first, second, employee)
    }

    /// Seconds until `condition` holds (polled every 20 ms), nil after `limit`.
    func seconds(until condition: () throws -> Bool, limit: Double = 10) rethrows -> Double? {
        try PostgresMountTests.seconds(until: condition, limit: limit)
    }

    @Test func locksThroughOneMountExcludeTheOthersProcesses() throws {
        let (a, b, employee) = try twoMounts(of: "locks", objects: 20)
        defer {
            _ = try? a.unmount()
            _ = try? b.unmount()
        }
        let fileA = "\(a.path)/Employee/\(employee)/lastName"
        let fileB = "\(b.path)/Employee/\(employee)/lastName"
        let folderA = "\(a.path)/Employee/\(employee)"
        #expect(try tryFlock(fileB) == 0, "nothing holds the file yet")

        // flock: LOCK_EX through A refuses LOCK_EX|LOCK_NB and LOCK_SH|LOCK_NB through B (and A).
        let holder = try Holder(fileA)
        #expect(holder.holds())
        #expect(try tryFlock(fileB) == 75)
        #expect(try tryFlock(fileB, shared: true) == 75)
        #expect(try tryFlock(fileA) == 75)
        // POSIX locks are another family (as on Linux): the flock does not refuse them.
        #expect(try posixProbe(fileB) == "F_UNLCK granted")
        // Folders: the kernel sends no lock requests for a FUSE directory, so their locks are its
        // own, on this machine only (docs/SEMANTICS.md): they exclude this mount's processes.
        let folderHolder = try Holder(folderA)
        #expect(folderHolder.holds())
        #expect(try tryFlock(folderA) == 75)
        folderHolder.kill()
        #expect(try seconds { try tryFlock(folderA) == 0 } != nil, "the folder's lock goes with its holder")

        // A blocked LOCK_EX waits, and a signal ends the wait.
        let waiter = Process()
        waiter.executableURL = URL(fileURLWithPath: "/usr/bin/flock")
        waiter.arguments = ["-x", fileB, "true"]
        try waiter.run()
        Thread.sleep(forTimeInterval: 0.5)
        #expect(waiter.isRunning, "LOCK_EX through B waits while A holds the lock")
        kill(waiter.processIdentifier, SIGKILL)
        let waited = Date()
        waiter.waitUntilExit()
        #expect(Date().timeIntervalSince(waited) < 3, "the blocked flock ends when killed")
        #expect(try tryFlock(fileB) == 75, "and the holder through A still holds")

        // The holder goes: B gets the lock.
        holder.kill()
        #expect(try seconds { try tryFlock(fileB) == 0 } != nil)

        // POSIX record locks: F_GETLK through B sees A's, F_SETLK is refused, then granted once it goes.
        let posix = try Holder(fileA, posix: true)
        #expect(posix.holds())
        #expect(try posixProbe(fileB) == "F_WRLCK refused")
        #expect(try tryFlock(fileB) == 0, "a POSIX lock does not refuse flock")
        posix.kill()
        #expect(try seconds { try posixProbe(fileB) == "F_UNLCK granted" } != nil)

        // A mount killed (SIGKILL) lets go of its locks: its server session ends.
        let last = try Holder(fileA)
        #expect(last.holds())
        #expect(try tryFlock(fileB) == 75)
        let mountProcess = try run("pgrep", ["-f", "storefs mount .* \(a.path) "]).lines.compactMap { Int32($0) }
        #expect(mountProcess.count == 1, "the mount's server process: \(mountProcess)")
        for pid in mountProcess { kill(pid, SIGKILL) }
        let released = try seconds { try tryFlock(fileB) == 0 }
        #expect(released != nil, "the killed mount's lock was let go")
        print("postgresql locks: a killed mount's lock was let go after \(String(format: "%.2f", released ?? -1)) s")
        last.kill()
        _ = try? run("fusermount3", ["-u", "-z", a.path])
    }

    /// A read-only mount lets the kernel open files without asking, and a file opened so is never
    /// RELEASEd; a flock ends at RELEASE. So a mount that holds locks in the server keeps its file
    /// opens even read-only: a flock through it ends with its holder, for the other mount too.
    @Test func aFlockThroughAReadOnlyMountEndsWithItsHolder() throws {
        let (readOnly, other, employee) = try twoMounts(of: "readonlylocks", objects: 5, firstOptions: ["ro"])
        defer {
            _ = try? readOnly.unmount()
            _ = try? other.unmount()
        }
        let file = "\(readOnly.path)/Employee/\(employee)/lastName"
        let otherFile = "\(other.path)/Employee/\(employee)/lastName"
        for round in 1...2 {
            let holder = try Holder(file)
            #expect(holder.holds(), "round \(round): the read-only mount grants the flock")
            #expect(try tryFlock(otherFile) == 75, "round \(round): the other mount sees it held")
            holder.kill()
            #expect(
                try seconds { try tryFlock(otherFile) == 0 && tryFlock(file) == 0 } != nil,
                "round \(round): the lock ends with its holder, seen through both mounts")
        }
    }

    /// `flock -o -x FILE -c "...; exec sleep 60"`: flock(1) closes the locked descriptor in its
    /// child before running the command, so once flock(1) itself is killed no process has that open
    /// file and the lock goes at once (the kernel's RELEASE with FUSE_RELEASE_FLOCK_UNLOCK), not
    /// when the command ends. Checked through the same mount, then through another one.
    @Test func flockDashOKilledLetsGoAtOnceNotWhenItsCommandEnds() throws {
        let (a, b, employee) = try twoMounts(of: "flocko", objects: 5)
        defer {
            _ = try? a.unmount()
            _ = try? b.unmount()
        }
        let fileA = "\(a.path)/Employee/\(employee)/lastName"
        let fileB = "\(b.path)/Employee/\(employee)/lastName"
        let scratch = try ScratchSpace.folder("flocko")
        defer { try? FileManager.default.removeItem(at: scratch) }
        for (through, file) in [("the same mount", fileA), ("another mount", fileB)] {
            let pidFile = scratch.appendingPathComponent("sleeper-\(file == fileA ? "a" : "b")").path
            let (locker, sleeper) = try flockRunningSleep(["-o", "-x", fileA], pidFile: pidFile)
            defer { if sleeper > 0 { kill(sleeper, SIGKILL) } }
            #expect(sleeper > 0, "the command runs under the lock")
            #expect(try tryFlock(file) == 75, "flock -o holds the lock through \(through)")
            let killed = Date()
            kill(locker.processIdentifier, SIGKILL)
            _ = try seconds(until: { try tryFlock(file) == 0 }, limit: 10)
            let released = Date().timeIntervalSince(killed)
            #expect(released < 10, "killing flock(1) lets go of its lock (through \(through)) while its command runs")
            print(
                "postgresql locks: flock -o killed, its lock free through \(through) after \(String(format: "%.2f", released)) s"
            )
            #expect(kill(sleeper, 0) == 0, "the command (sleep) still runs: the lock went with flock(1), not with it")
            // The command has no descriptor of the locked file (flock -o closed it).
            let descriptors = try run("ls", ["-l", "/proc/\(sleeper)/fd"]).output
            #expect(!descriptors.contains("lastName"), "\(descriptors)")
            print("postgresql locks: the command's descriptors: \(descriptors)")
            // Foundation's Process sees flock(1)'s end only once the command ends too (it keeps a
            // descriptor the child inherits), so the command is ended first.
            kill(sleeper, SIGKILL)
            locker.waitUntilExit()
        }

        // Without -o the command keeps the descriptor, so the open file and its lock outlive
        // flock(1) (as flock(2) says) and go only when the command ends.
        let (keeper, sleeper) = try flockRunningSleep(
            ["-x", fileA], pidFile: scratch.appendingPathComponent("keeper").path)
        defer { if sleeper > 0 { kill(sleeper, SIGKILL) } }
        #expect(sleeper > 0)
        kill(keeper.processIdentifier, SIGKILL)
        Thread.sleep(forTimeInterval: 1)
        #expect(try tryFlock(fileB) == 75, "without -o the command still holds the lock")
        kill(sleeper, SIGKILL)
        keeper.waitUntilExit()
        #expect(try seconds { try tryFlock(fileB) == 0 } != nil, "and lets go of it when it ends")
    }

    /// 2 mounts × 4 writers, each incrementing one counter `rounds` times under `flock` (read,
    /// write + 1, release): the counter ends exact. Also the figures of docs/benchmarks.md.
    @Test func writersOfTwoMountsIncrementACounterUnderFlockWithoutLosingOne() throws {
        let (a, b, employee) = try twoMounts(of: "counter", objects: 5)
        defer {
            _ = try? a.unmount()
            _ = try? b.unmount()
        }
        let relative = "Employee/\(employee)/lastName"

        // The lock's round trip: LOCK_EX and LOCK_UN of an open file, 200 times.
        let roundTrip = try run(
            "python3",
            [
                "-c",
                "import fcntl, os, sys, time\nfd = os.open(sys.argv[1], os.O_RDONLY)\nt = time.monotonic()\nfor _ in range(200):\n    fcntl.flock(fd, fcntl.LOCK_EX); fcntl.flock(fd, fcntl.LOCK_UN)\nprint((time.monotonic() - t) / 200 * 1000)",
                "\(a.path)/\(relative)"
            ])
        let milliseconds = Double(roundTrip.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1
        #expect(milliseconds > 0, "\(roundTrip.error)")

        let rounds = 25
        func count(_ mounts: [URLMount], writers: Int) throws -> (Int, Double) {
            #expect(try sh("echo 0 > \(mounts[0].path)/\(relative)").status == 0)
            let started = Date()
            var processes: [Process] = []
            for mount in mounts {
                let file = "\(mount.path)/\(relative)"
                for _ in 0..<writers {
                    let process = Process()
                    // Bounded (timeout(1), 300 s), as every child process a test waits on.
                    process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
                    process.arguments = [
                        "300", "/bin/sh", "-c",
                        "i=0; while [ $i -lt \(rounds) ]; do flock \"$1\" sh -c 'v=$(cat \"$1\"); echo $((v + 1)) > \"$1\"' - \"$1\" || exit 1; i=$((i + 1)); done",
                        "-", file
                    ]
                    try process.run()
                    processes.append(process)
                }
            }
            for process in processes { process.waitUntilExit() }
            let elapsed = Date().timeIntervalSince(started)
            #expect(processes.allSatisfy { $0.terminationStatus == 0 })
            let final = try run("flock", ["\(mounts[0].path)/\(relative)", "cat", "\(mounts[0].path)/\(relative)"])
            return (Int(final.output.trimmingCharacters(in: .whitespacesAndNewlines)) ?? -1, elapsed)
        }
        let (one, oneSeconds) = try count([a], writers: 4)
        #expect(one == 4 * rounds, "1 mount × 4 writers × \(rounds): the counter says \(one)")
        let (two, twoSeconds) = try count([a, b], writers: 4)
        #expect(two == 8 * rounds, "2 mounts × 4 writers × \(rounds): the counter says \(two)")
        let throughB = try run("flock", ["\(b.path)/\(relative)", "cat", "\(b.path)/\(relative)"]).output
        #expect(throughB == "\(8 * rounds)\n", "B reads the counter under the lock: \(throughB)")
        print(
            String(
                format:
                    "postgresql locks: flock LOCK_EX+LOCK_UN round trip %.3f ms; counter increments/s: 1 mount × 4 writers %.1f, 2 mounts × 4 writers %.1f",
                milliseconds, Double(4 * rounds) / oneSeconds, Double(8 * rounds) / twoSeconds))
    }
}
