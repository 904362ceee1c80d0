import Foundation
import FuseKit
import Testing

/// How requests travel (FUSE over io_uring or /dev/fuse) and the round trips FuseKit saves: no
/// FLUSH for read-only opens, no GETXATTR before writes (HANDLE_KILLPRIV_V2, with FuseKit clearing
/// set-ID bits itself).
@Suite struct RoundTripTests {
    static let ringSwitch = "/sys/module/fuse/parameters/enable_uring"

    /// Whether this kernel can offer FUSE over io_uring at all (Linux 6.14+ with CONFIG_FUSE_IO_URING).
    static var kernelHasIOUring: Bool { FileManager.default.fileExists(atPath: ringSwitch) }

    @Test func requestsGoThroughIOUringWhenTheKernelOffersIt() throws {
        let mount = try TestMount(MemoryFileSystem(), options: MountOptions(handlesSignals: false, ioUring: true))
        defer { mount.close() }
        #expect(try tool("ls", mount.path).status == 0)
        if Self.kernelHasIOUring {
            // FuseKit turned the switch on (we run as root) and libfuse registered its rings.
            let value = try String(contentsOfFile: Self.ringSwitch, encoding: .utf8)
            #expect(value.hasPrefix("Y") || value.hasPrefix("1"), "enable_uring is \(value)")
            #expect(mount.session.transport == .ioUring)
        } else {
            #expect(mount.session.transport == .device)
        }
    }

    @Test func requestsGoThroughTheDeviceWhenIOUringIsOff() throws {
        let mount = try TestMount(MemoryFileSystem(), options: MountOptions(handlesSignals: false, ioUring: false))
        defer { mount.close() }
        #expect(try tool("ls", mount.path).status == 0)
        #expect(mount.session.transport == .device)
    }

    /// `STOREFS_IO_URING=0` turns the ring off for every mount of a process tree; any other value,
    /// or none, leaves it on.
    @Test func theEnvironmentDecidesTheDefault() throws {
        #expect(MountOptions.ioUringByDefault(in: [:]))
        #expect(!MountOptions.ioUringByDefault(in: ["STOREFS_IO_URING": "0"]))
        #expect(MountOptions.ioUringByDefault(in: ["STOREFS_IO_URING": "1"]))
        #expect(MountOptions.ioUringByDefault(in: ["STOREFS_IO_URING": "no"]))
        #expect(MountOptions.ioUringByDefault(in: ["OTHER": "0"]))
        // Options made without saying take this process's environment, as the kernel gave it
        // (/proc/self/environ, not Foundation's reading of it).
        let environ = try Data(contentsOf: URL(fileURLWithPath: "/proc/self/environ"))
        let variables = environ.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
        let off = variables.contains("STOREFS_IO_URING=0")
        #expect(MountOptions().ioUring == !off, "STOREFS_IO_URING=0 is \(off ? "" : "not ")set here")
    }

    @Test func onlyAWritersCloseSendsFlush() throws {
        let fs = FuseSessionTests.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }
        for _ in 0..<5 { #expect(try tool("cat", mount.file("alpha.txt")).status == 0) }
        #expect(mount.counters.count(of: .flush) == 0, "reads: \(mount.counters.snapshot())")
        #expect(try tool("sh", "-c", "echo new > \(mount.file("alpha.txt"))").status == 0)
        #expect(mount.counters.count(of: .flush) >= 1, "a write's close is flushed: \(mount.counters.snapshot())")
        #expect(fs.content(of: fs.child("alpha.txt")!) == "new\n")
    }

    @Test func writesAskNoSecurityCapability() throws {
        let fs = FuseSessionTests.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }
        #expect(try tool("sh", "-c", "echo a > \(mount.file("new.txt"))").status == 0)
        let before = mount.counters.count(of: .getxattr)
        // Appending opens without O_TRUNC: only the writes could ask for security.capability.
        #expect(
            try tool("sh", "-c", "for i in 1 2 3 4 5 6 7 8; do echo $i >> \(mount.file("new.txt")); done").status == 0)
        #expect(mount.counters.count(of: .getxattr) == before, "\(mount.counters.snapshot())")
        #expect(fs.content(of: fs.child("new.txt")!) == "a\n1\n2\n3\n4\n5\n6\n7\n8\n")
    }

    @Test func aWriteByAnotherUserClearsSetUserID() throws {
        let fs = FuseSessionTests.makeTree()
        let mount = try TestMount(fs, options: MountOptions(allowOther: true, handlesSignals: false))
        defer { mount.close() }
        let file = mount.file("alpha.txt")
        #expect(try tool("chmod", "4777", file).status == 0)
        #expect(try tool("stat", "-c", "%a", file).output == "4777\n")
        // Without CAP_FSETID a write must clear set-user-ID; the kernel leaves that to FuseKit. The
        // file is opened by root (the test's folders are private) and written by nobody.
        let write = try tool(
            "sh", "-c", "exec 3>>'\(file)' && setpriv --reuid=65534 --regid=65534 --clear-groups sh -c 'echo more >&3'")
        #expect(write.status == 0, "\(write.errorOutput)")
        let alpha = try #require(fs.child("alpha.txt"))
        let kept = fs.state.withLock { $0.nodes[alpha]?.attributes.permissions }
        #expect(kept == 0o777, "the filesystem holds \(String(kept ?? 0, radix: 8))")
        #expect(try tool("stat", "-c", "%a", file).output == "777\n")
        #expect(fs.content(of: fs.child("alpha.txt")!)?.hasSuffix("more\n") == true)

        // A truncate by another user clears it too (SETATTR marked FATTR_KILL_SUIDGID).
        #expect(try tool("chmod", "4777", file).status == 0)
        let truncate = try tool(
            "sh", "-c",
            "exec 3>>'\(file)' && setpriv --reuid=65534 --regid=65534 --clear-groups /usr/bin/python3 -c 'import os; os.ftruncate(3, 2)'"
        )
        #expect(truncate.status == 0, "\(truncate.errorOutput)")
        #expect(try tool("stat", "-c", "%a %s", file).output == "777 2\n")
    }
}
