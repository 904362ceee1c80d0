import Foundation
import TestSupport
import Testing

/// `mount -t fuse.storefs` and /etc/fstab lines, through the real mount(8) and the helper
/// installed where mount(8) looks for it (removed again afterwards).
@Suite(.serialized) struct MountHelperTests {
    static let helperPath = "/sbin/mount.fuse.storefs"

    /// Installs scripts/mount.storefs as /sbin/mount.fuse.storefs, pointing at the built binary,
    /// runs `body`, then removes it (or puts back a helper that was there before).
    static func withHelper(_ body: () throws -> Void) throws {
        let binary = try storefsBinary()
        let source = try String(
            contentsOf: packageRoot.appendingPathComponent("scripts/mount.storefs"), encoding: .utf8)
        let lines = source.split(separator: "\n", omittingEmptySubsequences: false).map { line in
            line.hasPrefix("STOREFS=") ? "STOREFS=\"${STOREFS:-\(binary)}\"" : String(line)
        }
        let backup = helperPath + ".storefs-test-backup"
        let hadHelper = FileManager.default.fileExists(atPath: helperPath)
        if hadHelper { try FileManager.default.moveItem(atPath: helperPath, toPath: backup) }
        defer {
            try? FileManager.default.removeItem(atPath: helperPath)
            if hadHelper { try? FileManager.default.moveItem(atPath: backup, toPath: helperPath) }
        }
        try lines.joined(separator: "\n").write(toFile: helperPath, atomically: true, encoding: .utf8)
        try FileManager.default.setAttributes([.posixPermissions: 0o755], ofItemAtPath: helperPath)
        try body()
    }

    @Test func mountTypeFuseStorefsMountsReadOnlyAndUmountUnmounts() throws {
        let mount = try tool("mount", package: "mount")
        let umount = try tool("umount", package: "mount")
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let stored = try storedLastName(scratch.store)
        #expect(!stored.isEmpty, "the sample store has a last name for Z_PK 6")
        try Self.withHelper {
            // log_file keeps the test's log in its scratch folder (the default is the system log).
            let mounted = try run(
                mount,
                ["-t", "fuse.storefs", scratch.store, scratch.mountPoint, "-o", "ro,log_file=\(scratch.path)/log"])
            #expect(mounted.succeeded, "mount -t fuse.storefs: \(mounted.errorOutput)")
            defer { _ = try? run(umount, [scratch.mountPoint]) }
            // mount(8) returns once the mount answers: no waiting here.
            #expect(isMounted(scratch.mountPoint))
            #expect(mountType(scratch.mountPoint) == "fuse.storefs")
            let file = scratch.mountPoint + "/Employee/p6/lastName"
            // The very first access, as a user's would be: no listing warms anything up.
            let cold = try run("/bin/cat", [file])
            #expect(cold.output == stored + "\n", "cat of a freshly mounted store: \(cold.errorOutput)")
            _ = try run("/bin/ls", [scratch.mountPoint + "/Employee"])
            #expect(try run("/bin/cat", [file]).output == stored + "\n")
            let write = try shell("echo Changed > \(quoted(file))")
            #expect(!write.succeeded)
            #expect(write.errorOutput.contains("Read-only file system"), "the write failed with: \(write.errorOutput)")
            let unmounted = try run(umount, [scratch.mountPoint])
            #expect(unmounted.succeeded, "umount: \(unmounted.errorOutput)")
            #expect(!isMounted(scratch.mountPoint))
        }
        #expect(try storedLastName(scratch.store) == stored)
    }

    /// A PostgreSQL store as the source, as an fstab line gives it: `postgresql://...` for
    /// `mount -t fuse.storefs` (`_netdev` is mount(8)'s and ignored by storefs).
    @Test func mountTypeFuseStorefsMountsAPostgreSQLURL() throws {
        let mount = try tool("mount", package: "mount")
        let umount = try tool("umount", package: "mount")
        let server = try PostgresServer.shared()
        let url = server.url(schema: PostgresServer.uniqueSchema("fstab"))
        let scratch = try Scratch()
        defer { scratch.remove() }
        let created = try run(try storefsBinary(), ["create", "--model", "sample", url.absoluteString])
        #expect(created.succeeded, "storefs create URL: \(created.errorOutput)")
        try Self.withHelper {
            let mounted = try run(
                mount,
                [
                    "-t", "fuse.storefs", url.absoluteString, scratch.mountPoint, "-o",
                    "_netdev,log_file=\(scratch.path)/log"
                ])
            #expect(mounted.succeeded, "mount -t fuse.storefs URL: \(mounted.errorOutput)")
            defer { _ = try? run(umount, [scratch.mountPoint]) }
            #expect(mountType(scratch.mountPoint) == "fuse.storefs")
            #expect(try run("/bin/mkdir", [scratch.mountPoint + "/Department/p1"]).succeeded)
            #expect(try shell("echo Research > \(quoted(scratch.mountPoint + "/Department/p1/name"))").succeeded)
            let servers = serverProcesses(of: scratch.mountPoint)
            #expect(!servers.isEmpty, "a storefs process serves \(scratch.mountPoint)")
            #expect(try run(umount, [scratch.mountPoint]).succeeded)
            // umount(8) of a FUSE mount returns before its server has ended; the server commits
            // what it holds before it exits, as a service manager's stop waits for.
            #expect(eventually(timeout: 60) { servers.allSatisfy { kill($0, 0) != 0 } }, "the server ends after umount")
        }
        let name = try server.psql(
            "SELECT \"ZNAME\" FROM \(url.query!.split(separator: "=").last!).\"ZDEPARTMENT\" WHERE \"Z_PK\" = 1")
        #expect(name == "Research\n", "the write through the fstab-style mount is in the store: \(name)")
    }

    @Test func anFstabLineMountsWithMountsOwnOptionsIgnored() throws {
        let mount = try tool("mount", package: "mount")
        let umount = try tool("umount", package: "mount")
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let stored = try storedLastName(scratch.store)
        let log = scratch.path + "/storefs.log"
        let fstab = scratch.path + "/fstab"
        try "\(scratch.store) \(scratch.mountPoint) fuse.storefs defaults,_netdev,nofail,ro,log_file=\(log) 0 0\n"
            .write(toFile: fstab, atomically: true, encoding: .utf8)
        try Self.withHelper {
            // -T: this fstab instead of /etc/fstab; mount(8) reads the line as at boot.
            let mounted = try run(mount, ["-T", fstab, scratch.mountPoint])
            #expect(mounted.succeeded, "mount -T fstab: \(mounted.errorOutput)")
            defer { _ = try? run(umount, [scratch.mountPoint]) }
            #expect(isMounted(scratch.mountPoint))
            _ = try run("/bin/ls", [scratch.mountPoint + "/Employee"])
            #expect(try run("/bin/cat", [scratch.mountPoint + "/Employee/p6/lastName"]).output == stored + "\n")
            let write = try shell("echo Changed > \(quoted(scratch.mountPoint + "/Employee/p6/lastName"))")
            #expect(write.errorOutput.contains("Read-only file system"))
            #expect(try run(umount, [scratch.mountPoint]).succeeded)
        }
        let logged = (try? String(contentsOfFile: log, encoding: .utf8)) ?? ""
        #expect(logged.contains("mounted"), "log_file= gets the server's log; it holds: \(logged)")
    }

    @Test func aMissingStoreFailsWithMountsFailureStatus() throws {
        let mount = try tool("mount", package: "mount")
        let scratch = try Scratch()
        defer { scratch.remove() }
        try Self.withHelper {
            let result = try run(
                mount,
                [
                    "-t", "fuse.storefs", scratch.path + "/missing.sqlite", scratch.mountPoint, "-o",
                    "log_file=\(scratch.path)/log"
                ])
            #expect(result.status == 32, "mount(8)'s status for a failed mount")
            #expect(result.errorOutput.contains("missing.sqlite"), "the reason names the store: \(result.errorOutput)")
            #expect(!isMounted(scratch.mountPoint))
        }
    }
}
