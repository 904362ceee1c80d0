import Foundation
import TestSupport
import Testing

/// A store on a full disk: the fsync of a value that does not fit fails with ENOSPC (not EIO), the
/// value is taken back, and the mount goes on (a value that fits is saved, and the unmount saves
/// everything left). SQLite's SQLITE_FULL and a full external data folder both say ENOSPC.
@Suite struct FullDiskMountTests {
    /// Writes `count` bytes of `byte` to `path`, fsyncs, closes; prints "ok" or the errno's name.
    static let filler = """
        import errno, os, sys
        path, count = sys.argv[1], int(sys.argv[2])
        try:
            f = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o644)
            os.write(f, os.urandom(count // 2).hex().encode()[:count])
            os.fsync(f)
            os.close(f)
            print("ok")
        except OSError as e:
            print(errno.errorcode[e.errno])
        """

    func fill(_ path: String, bytes: Int) throws -> String {
        try run("timeout", ["60", "python3", "-c", Self.filler, path, String(bytes)]).output.trimmingCharacters(
            in: .whitespacesAndNewlines)
    }

    @Test func aValueThatDoesNotFitFailsWithENOSPCAndTheMountGoesOn() throws {
        try requireFuse()
        let folder = try ScratchSpace.folder("fulldisk")
        defer { try? FileManager.default.removeItem(at: folder) }
        let disk = folder.appendingPathComponent("disk")
        let mountPoint = folder.appendingPathComponent("mnt")
        for directory in [disk, mountPoint] {
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        }
        #expect(try run("mount", ["-t", "tmpfs", "-o", "size=2m", "tmpfs", disk.path]).status == 0)
        defer { _ = try? run("umount", ["-l", disk.path]) }
        let store = disk.appendingPathComponent("Company.sqlite")
        #expect(try run(try storefsBinary(), ["sample", "--objects", "40", store.path]).status == 0)
        let log = folder.appendingPathComponent("storefs.log")
        let mounted = try run(try storefsBinary(), ["mount", store.path, mountPoint.path, "--log-file", log.path])
        #expect(mounted.status == 0, "\(mounted.error)")
        defer { _ = try? run(try storefsBinary(), ["unmount", mountPoint.path]) }
        let person = "\(mountPoint.path)/Employee/p2"
        // A string of 3 MB on a disk of 2 MB: SQLITE_FULL.
        #expect(try fill("\(person)/firstName", bytes: 3_000_000) == "ENOSPC")
        let logText = (try? String(contentsOf: log, encoding: .utf8)) ?? ""
        #expect(logText.contains("disk is full") && logText.contains("result code 13"), "\(logText.suffix(1500))")
        // Bytes that go to an external file (over 128 KiB): the file does not fit either.
        let photo = try fill("\(person)/photo", bytes: 2_500_000)
        #expect(photo == "ENOSPC", "\(photo): \(((try? String(contentsOf: log, encoding: .utf8)) ?? "").suffix(1500))")
        // Taken back: the file shows the stored value; a value that fits is saved.
        let shown = try run("cat", ["\(person)/firstName"]).output
        #expect(shown.count < 100, "the stored value is shown again: \(shown.prefix(40))")
        #expect(try fill("\(person)/firstName", bytes: 10) == "ok")
        let unmounted = try run(try storefsBinary(), ["unmount", mountPoint.path])
        #expect(unmounted.status == 0, "\(unmounted.output)\(unmounted.error)")
    }
}
