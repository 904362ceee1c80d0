import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// Short runs of the reliability scripts (docs/RELIABILITY.md gives the long ones and their
/// figures): the real binary, real mounts through /dev/fuse, real kill -9.
@Suite(.serialized) struct ReliabilityScriptTests {
    /// Fails with a clear message when the scripts cannot run here.
    static func requireTools() throws {
        let fd = open("/dev/fuse", O_RDWR)
        guard fd >= 0 else {
            throw SystemTestError(
                "the reliability scripts mount filesystems and need /dev/fuse: \(String(cString: strerror(errno)))")
        }
        close(fd)
        _ = try tool("fusermount3", package: "fuse3")
        _ = try tool("python3", package: "python3")
        _ = try tool("sqlite3", package: "sqlite3")
    }

    @Test func killingTheServerDuringFsyncedWritesLosesNothing() throws {
        try Self.requireTools()
        // 3 trials per store type, 4 writers each, kill -9 within 1.5 s of the writers starting.
        let result = try run(
            packageRoot.appendingPathComponent("scripts/crash-trials").path,
            ["--trials", "3", "--max-delay", "1.5", "--seed", "11", "--storefs", try storefsBinary()])
        #expect(result.succeeded, "crash-trials failed:\n\(result.output)\(result.errorOutput)")
        let total = try #require(result.output.split(separator: "\n").first { $0.hasPrefix("crash-trials total") })
        #expect(total.contains("9 trials") && total.contains(" 0 losses, 0 damaged, 0 leftovers, 0 hangs"), "\(total)")
        #expect(!total.contains(" 0 writes"), "no write was logged before the kills: \(total)")
    }

    /// The power-loss trials need LazyFS's source, which CI cannot fetch (docs/RELIABILITY.md runs
    /// them by hand): without it, or given a folder that is not it, the script says what it needs
    /// and where to get it, exits 2 (cannot run, not "trials failed"), and builds, installs and
    /// mounts nothing.
    @Test func thePowerLossScriptSaysClearlyWhatItNeedsWithoutLazyFSSource() throws {
        let script = packageRoot.appendingPathComponent("scripts/power-loss").path
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("power-loss-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let build = folder.appendingPathComponent("build").path
        func lazyFSMounts() throws -> Int {
            try String(contentsOfFile: "/proc/self/mounts", encoding: .utf8).split(separator: "\n")
                .filter { $0.contains(" fuse.lazyfs ") }.count
        }
        let mountsBefore = try lazyFSMounts()

        let none = try run(script, ["--lazyfs-build", build, "--storefs", "/bin/false"])
        #expect(none.status == 2, "\(none.status): \(none.errorOutput)")
        #expect(none.errorOutput.contains("--lazyfs-source PATH is needed"), "\(none.errorOutput)")
        #expect(none.errorOutput.contains("github.com/dsrhaslab/lazyfs"), "says where to get it: \(none.errorOutput)")

        let notLazyFS = try run(
            script, ["--lazyfs-source", folder.path, "--lazyfs-build", build, "--storefs", "/bin/false"])
        #expect(notLazyFS.status == 2, "\(notLazyFS.status): \(notLazyFS.errorOutput)")
        #expect(notLazyFS.errorOutput.contains("is not LazyFS's source"), "\(notLazyFS.errorOutput)")

        let missing = folder.appendingPathComponent("nothing-here").path
        let absent = try run(script, ["--lazyfs-source", missing, "--lazyfs-build", build, "--storefs", "/bin/false"])
        #expect(absent.status == 2 && absent.errorOutput.contains("no such file or folder"), "\(absent.errorOutput)")

        #expect(!FileManager.default.fileExists(atPath: build), "nothing was built")
        #expect(try lazyFSMounts() == mountsBefore, "nothing was mounted")
    }

    @Test func mutatedStoresNeverCrashHangOrChangeUnderInfoAndAReadOnlyMount() throws {
        try Self.requireTools()
        let result = try run(
            packageRoot.appendingPathComponent("scripts/mutate-stores").path,
            [
                "--variants", "30", "--seed", "5", "--storefs", try storefsBinary(), "--keep",
                FileManager.default.temporaryDirectory.appendingPathComponent(
                    "mutate-failures-\(UUID().uuidString.prefix(8))"
                ).path
            ])
        #expect(result.succeeded, "mutate-stores failed:\n\(result.output)\(result.errorOutput)")
        #expect(result.output.contains("mutate-stores: 30 variants"), "\(result.output)")
        #expect(
            result.output.contains("crashes 0, hangs 0, input files changed 0, external entities resolved 0"),
            "\(result.output)")
    }
}
