import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// storefs mounts over FUSE's io_uring transport when the kernel offers it (and says which way in
/// its log), and a killed server leaves no dead mount either way (auto_unmount).
@Suite struct TransportMountTests {
    /// What the log must say given the environment (scripts/test runs the mount tests a second
    /// time with STOREFS_IO_URING=0) and the kernel.
    static var expectedWay: String {
        if ProcessInfo.processInfo.environment["STOREFS_IO_URING"] == "0" { return "/dev/fuse" }
        return FileManager.default.fileExists(atPath: "/sys/module/fuse/parameters/enable_uring")
            ? "io_uring" : "/dev/fuse"
    }

    @Test func theLogSaysWhichWayRequestsCome() throws {
        let mount = try MountedStore(objects: 100)
        defer { try? mount.unmount() }
        #expect(try run("cat", ["\(mount.path)/Employee/p1/lastName"]).status == 0)
        #expect(
            eventuallyTrue {
                mount.logText.contains("FUSE requests of \(mount.path) arrive through \(Self.expectedWay)")
            },
            "\(mount.logText.suffix(800))")
    }

    @Test func aKilledServerLeavesNoDeadMount() throws {
        let mount = try MountedStore(objects: 100)
        defer { try? mount.unmount() }
        #expect(try sh("echo Hopper > \(mount.path)/Employee/p1/lastName").status == 0)
        let servers = try run("pgrep", ["-f", "storefs mount \(mount.store.path) \(mount.path)"]).lines
        #expect(servers.count == 1, "one server, its watcher not matched: \(servers)")
        let pid = try #require(servers.first.flatMap { Int32($0) })
        kill(pid, SIGKILL)
        #expect(
            eventuallyTrue(seconds: 20) {
                !((try? String(contentsOfFile: "/proc/self/mounts", encoding: .utf8)) ?? "").contains(" \(mount.path) ")
            },
            "the dead mount was detached (auto_unmount)")
        var status = stat()
        #expect(
            stat(mount.path, &status) == 0,
            "the mount point is a plain folder again: \(String(cString: strerror(errno)))")
        // The store can be mounted again at once.
        try mount.mount()
        #expect(try run("ls", [mount.path]).status == 0)
    }

    private func eventuallyTrue(seconds: Double = 10, _ condition: () -> Bool) -> Bool {
        let deadline = Date().addingTimeInterval(seconds)
        while !condition() {
            if Date() > deadline { return false }
            Thread.sleep(forTimeInterval: 0.05)
        }
        return true
    }
}
