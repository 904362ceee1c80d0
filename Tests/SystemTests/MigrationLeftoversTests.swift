import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A migration killed part-way (`kill -9` of `storefs migrate --in-place`) leaves its temporary
/// store beside the store; the next migration (or open for writing) removes it, and only what a
/// dead process or an older storefs left, never a running migration's files or anything else.
@Suite struct MigrationLeftoversTests {
    static let rules = packageRoot.appendingPathComponent("Tests/Fixtures/migration/rules")

    /// A process ID that ran and ended: its files are a dead process's.
    static func deadProcessID() throws -> pid_t {
        var pid: pid_t = 0
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup("/bin/true"), nil]
        defer { free(argv[0]) }
        guard posix_spawn(&pid, "/bin/true", nil, nil, argv, nil) == 0 else { throw SystemTestError("spawn failed") }
        var status: Int32 = 0
        waitpid(pid, &status, 0)
        return pid
    }

    @Test func whatADeadMigrationLeftGoesAndNothingElse() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let binary = try storefsBinary()
        let base = Self.rules.appendingPathComponent("Base.xcdatamodel").path
        #expect(try run(binary, ["create", "--model", base, scratch.store]).succeeded)
        let dead = try Self.deadProcessID()
        let folder = URL(fileURLWithPath: scratch.path)
        let leftovers = [
            ".Library.sqlite.migrating-\(dead)-0A1B2C3D.sqlite",
            ".Library.sqlite.migrating-\(dead)-0A1B2C3D.sqlite-wal",
            "..Library.sqlite.migrating-\(dead)-0A1B2C3D_SUPPORT/_EXTERNAL_DATA/A1",
            // An older storefs wrote no process ID: an in-place migration holds the store's lock,
            // so no migration that could own it runs.
            ".Library.sqlite.migrating-0A1B2C3E.sqlite"
        ]
        let kept = [
            // A running process's (this test's) migration, and what is no migration's at all.
            ".Library.sqlite.migrating-\(getpid())-0A1B2C3F.sqlite", ".Library.sqlite.migrating-notes.txt",
            ".Other.sqlite.migrating-\(dead)-0A1B2C40.sqlite"
        ]
        for name in leftovers + kept {
            let url = folder.appendingPathComponent(name)
            try FileManager.default.createDirectory(
                at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data("left".utf8).write(to: url)
        }
        let migrated = try run(
            binary,
            [
                "migrate", "--in-place", scratch.store, "--model",
                Self.rules.appendingPathComponent("Added.xcdatamodel").path
            ])
        #expect(migrated.succeeded, "\(migrated.errorOutput)")
        for name in leftovers {
            #expect(
                !FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), "\(name) is left")
        }
        #expect(
            !FileManager.default.fileExists(
                atPath: scratch.path + "/..Library.sqlite.migrating-\(dead)-0A1B2C3D_SUPPORT"))
        for name in kept {
            #expect(FileManager.default.fileExists(atPath: folder.appendingPathComponent(name).path), "\(name) went")
        }
    }

    /// The real thing: `kill -9` while a migration in place writes its new store, then the same
    /// migration again.
    @Test func aMigrationKilledPartWayIsCleanedUpByTheNext() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let binary = try storefsBinary()
        #expect(try run(binary, ["sample", "--objects", "5000", scratch.store]).succeeded)
        let model = scratch.path + "/Company2.xcdatamodel"
        #expect(try run(binary, ["model", scratch.store, "--output", model]).succeeded)
        let contents = try String(contentsOfFile: model + "/contents", encoding: .utf8).replacingOccurrences(
            of: "<entity name=\"Department\" syncable=\"YES\">",
            with:
                "<entity name=\"Department\" syncable=\"YES\">\n<attribute name=\"motto\" optional=\"YES\" attributeType=\"String\"/>"
        )
        try contents.write(toFile: model + "/contents", atomically: true, encoding: .utf8)
        func temporaries() -> [String] {
            ((try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? []).filter {
                $0.contains(".migrating-")
            }
        }
        let process = Process()
        process.executableURL = URL(fileURLWithPath: binary)
        process.arguments = ["migrate", "--in-place", scratch.store, "--model", model]
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        try process.run()
        let appeared = eventually(timeout: 120) { !temporaries().isEmpty || !process.isRunning }
        kill(process.processIdentifier, SIGKILL)
        _ = waitForExit(process, timeout: 30)
        guard appeared, !temporaries().isEmpty else {
            Issue.record("the migration ended before it could be killed part-way; make the store larger")
            return
        }
        let again = try run(binary, ["migrate", "--in-place", scratch.store, "--model", model])
        #expect(again.succeeded, "\(again.errorOutput)")
        #expect(temporaries().isEmpty, "left: \(temporaries())")
        #expect(try run(binary, ["info", scratch.store]).output.contains("objects:  5000"))
    }
}
