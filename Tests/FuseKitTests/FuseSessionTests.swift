import Foundation
import Synchronization
import Testing

@testable import FuseKit

/// Real kernel mounts of ``MemoryFileSystem``, driven by the ordinary command-line tools.
@Suite(.serialized)
struct FuseSessionTests {
    /// The fixture: two files, a symlink, a subdirectory with files, xattrs.
    static func makeTree() -> MemoryFileSystem {
        let fs = MemoryFileSystem()
        fs.add("alpha.txt", kind: .regularFile, content: "hello from alpha\n", xattrs: ["user.color": "blue"])
        fs.add("beta.json", kind: .regularFile, content: "{\"b\": 2}")
        fs.add("link", kind: .symbolicLink, target: "alpha.txt")
        let sub = fs.add("sub", kind: .directory)
        for index in 0..<5 {
            fs.add("n\(index).txt", in: sub, kind: .regularFile, content: String(repeating: "x", count: index))
        }
        return fs
    }

    @Test func listsReadsAndResolvesLikeTheTree() throws {
        let fs = Self.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }

        let listing = try tool("ls", "-a", mount.path)
        #expect(listing.status == 0, "\(listing.errorOutput)")
        #expect(listing.output.split(separator: "\n") == [".", "..", "alpha.txt", "beta.json", "link", "sub"])

        let long = try tool("ls", "-la", mount.path)
        let lines = long.output.split(separator: "\n").map { $0.split(separator: " ").joined(separator: " ") }
        #expect(lines.contains("-rw-r--r-- 1 root root 17 Nov 14 2023 alpha.txt"), "\(long.output)")
        #expect(lines.contains("lrw-r--r-- 1 root root 9 Nov 14 2023 link -> alpha.txt"), "\(long.output)")
        #expect(lines.contains("drwxr-xr-x 2 root root 0 Nov 14 2023 sub"), "\(long.output)")

        #expect(try tool("stat", "-c", "%s", mount.file("alpha.txt")).output == "17\n")
        #expect(
            try tool("stat", "-c", "%Y.%y", mount.file("alpha.txt")).output.hasPrefix(
                "1700000000.2023-11-14 22:13:20.250000000"))
        #expect(try tool("cat", mount.file("alpha.txt")).output == "hello from alpha\n")
        #expect(try tool("cat", mount.file("sub/n3.txt")).output == "xxx")
        #expect(try tool("readlink", mount.file("link")).output == "alpha.txt\n")
        #expect(try tool("cat", mount.file("link")).output == "hello from alpha\n")

        let found = try tool("find", mount.path).output.split(separator: "\n").map {
            String($0.dropFirst(mount.path.count))
        }
        #expect(
            Set(found) == Set(["", "/alpha.txt", "/beta.json", "/link", "/sub"] + (0..<5).map { "/sub/n\($0).txt" }))

        let missing = try tool("cat", mount.file("nope"))
        #expect(missing.status != 0 && missing.errorOutput.contains("No such file or directory"))
        #expect(try tool("df", mount.path).output.contains("storefs"))
    }

    @Test func longListingNeedsNoLookups() throws {
        let fs = Self.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }

        #expect(try tool("stat", mount.file("sub")).status == 0)  // the one lookup, of `sub` itself
        mount.counters.reset()
        let listing = try tool("ls", "-l", mount.file("sub"))
        #expect(listing.output.split(separator: "\n").count == 6, "\(listing.output)")  // total + 5
        #expect(mount.counters.count(of: .lookup) == 0, "\(mount.counters.snapshot())")
        #expect(mount.counters.count(of: .readdirplus) >= 1)
        #expect(mount.counters.count(of: .readdir) == 0)
        // Each accepted readdirplus entry took a lookup, '.' and '..' none.
        #expect(fs.state.withLock { $0.lookups.values.reduce(0, +) } >= 6)
        #expect(mount.counters.snapshot()["readdirplus"] == mount.counters.count(of: .readdirplus))
        #expect(mount.counters.snapshot(includingZeros: true).count == OperationCounters.Operation.allCases.count)
    }

    @Test func extendedAttributes() throws {
        let fs = Self.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }
        let alpha = mount.file("alpha.txt")

        let dump = try tool("getfattr", "-d", alpha)
        #expect(dump.output.contains("user.color=\"blue\""), "\(dump)")
        #expect(try tool("getfattr", "--only-values", "-n", "user.color", alpha).output == "blue")

        mount.counters.reset()
        let missing = try tool("getfattr", "-n", "user.missing", alpha)
        #expect(missing.status != 0)
        #expect(missing.errorOutput.contains("No such attribute"), "\(missing.errorOutput)")
        #expect(mount.counters.count(of: .errors) >= 1)

        #expect(try tool("setfattr", "-n", "user.note", "-v", "written", alpha).status == 0)
        #expect(try fs.extendedAttribute("user.note", of: fs.child("alpha.txt")!) == Data("written".utf8))
        #expect(try tool("getfattr", "--only-values", "-n", "user.note", alpha).output == "written")

        // The size protocol: 0 asks for the length, too small a buffer is ERANGE.
        #expect(try xattrCall("getxattr", alpha, "user.note", size: 0) == "7 0")
        #expect(try xattrCall("getxattr", alpha, "user.note", size: 3) == "-1 \(ERANGE)")
        #expect(try xattrCall("listxattr", alpha, size: 0) == "\("user.color\0user.note\0".utf8.count) 0")
        #expect(try xattrCall("listxattr", alpha, size: 3) == "-1 \(ERANGE)")

        #expect(try tool("setfattr", "-x", "user.note", alpha).status == 0)
        #expect(try tool("getfattr", "-n", "user.note", alpha).errorOutput.contains("No such attribute"))
    }

    /// Calls getxattr(2)/listxattr(2) with a buffer of `size` bytes (through Python's ctypes, as
    /// Glibc's Swift module doesn't export them); answers "<result> <errno>".
    func xattrCall(_ function: String, _ path: String, _ name: String? = nil, size: Int) throws -> String {
        let nameArgument = name.map { "b\"\($0)\", " } ?? ""
        let script = """
            import ctypes, sys
            libc = ctypes.CDLL(None, use_errno=True)
            buffer = ctypes.create_string_buffer(max(1, \(size)))
            result = libc.\(function)(sys.argv[1].encode(), \(nameArgument)buffer if \(size) else None, \(size))
            print(result, ctypes.get_errno() if result < 0 else 0)
            """
        return try tool("python3", "-c", script, path).output.trimmingCharacters(in: .whitespacesAndNewlines)
    }

    @Test func writesGoThroughToTheTree() throws {
        let fs = Self.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }

        #expect(try tool("sh", "-c", "echo hello > \(mount.file("new.txt"))").status == 0)
        #expect(fs.child("new.txt").flatMap(fs.content(of:)) == "hello\n")
        #expect(try tool("sh", "-c", "echo more >> \(mount.file("new.txt"))").status == 0)
        #expect(try tool("cat", mount.file("new.txt")).output == "hello\nmore\n")
        #expect(try tool("sh", "-c", "echo replaced > \(mount.file("alpha.txt"))").status == 0)
        #expect(fs.content(of: fs.child("alpha.txt")!) == "replaced\n")

        #expect(try tool("mkdir", mount.file("made")).status == 0)
        #expect(try tool("stat", "-c", "%F %a", mount.file("made")).output == "directory 755\n")
        #expect(try tool("mv", mount.file("new.txt"), mount.file("made/moved.txt")).status == 0)
        #expect(fs.child("new.txt") == nil)
        #expect(fs.child("moved.txt", of: fs.child("made")!).flatMap(fs.content(of:)) == "hello\nmore\n")
        #expect(try tool("ls", mount.file("made")).output == "moved.txt\n")

        #expect(try tool("chmod", "600", mount.file("made/moved.txt")).status == 0)
        #expect(try tool("stat", "-c", "%a", mount.file("made/moved.txt")).output == "600\n")
        #expect(try tool("truncate", "-s", "3", mount.file("made/moved.txt")).status == 0)
        #expect(try tool("cat", mount.file("made/moved.txt")).output == "hel")
        #expect(try tool("touch", "-d", "2001-02-03 04:05:06.5 UTC", mount.file("beta.json")).status == 0)
        #expect(try tool("stat", "-c", "%Y", mount.file("beta.json")).output == "981173106\n")
        let before = Date()
        #expect(try tool("touch", mount.file("beta.json")).status == 0)  // UTIME_NOW
        let beta = fs.child("beta.json")!
        let touched = fs.state.withLock { $0.nodes[beta]!.attributes.modificationTime }
        #expect(touched >= before.addingTimeInterval(-1))

        #expect(try tool("ln", "-s", "made/moved.txt", mount.file("link2")).status == 0)
        #expect(try tool("readlink", mount.file("link2")).output == "made/moved.txt\n")

        let notEmpty = try tool("rmdir", mount.file("made"))
        #expect(notEmpty.status != 0 && notEmpty.errorOutput.contains("not empty"))
        #expect(try tool("rm", mount.file("made/moved.txt")).status == 0)
        #expect(try tool("rmdir", mount.file("made")).status == 0)
        #expect(fs.child("made") == nil)
        #expect(mount.counters.count(of: .create) == 1)
        #expect(mount.counters.count(of: .write) >= 3)
        #expect(mount.counters.count(of: .rename) == 1)
    }

    @Test func invalidationShowsChangesMadeBehindTheKernel() throws {
        let fs = Self.makeTree()
        // Read-only: a rw mount drops cached attributes after every read (atime), which would
        // reveal the change without any invalidation.
        let mount = try TestMount(fs, options: MountOptions(readOnly: true, handlesSignals: false))
        defer { mount.close() }
        let alpha = fs.child("alpha.txt")!
        let invalidator = try #require(fs.invalidator.withLock { $0 })

        #expect(try tool("cat", mount.file("alpha.txt")).output == "hello from alpha\n")
        fs.setContent("changed behind the kernel's back\n", of: alpha)
        // One-hour timeouts and keep_cache: the kernel still serves the old size and pages.
        #expect(try tool("cat", mount.file("alpha.txt")).output == "hello from alpha\n")
        invalidator.invalidateInode(alpha)
        #expect(mount.eventually { mount.counters.count(of: .invalidations) == 1 })
        #expect(try tool("cat", mount.file("alpha.txt")).output == "changed behind the kernel's back\n")

        #expect(try tool("stat", mount.file("beta.json")).status == 0)
        fs.renameBehindTheKernel("beta.json", to: "gamma.json")
        #expect(try tool("stat", mount.file("beta.json")).status == 0)  // cached name
        invalidator.invalidateEntry(parent: .root, name: "beta.json")
        invalidator.invalidateInode(.root)
        #expect(mount.eventually { mount.counters.count(of: .invalidations) == 3 })
        #expect(try tool("stat", mount.file("beta.json")).status != 0)
        #expect(try tool("cat", mount.file("gamma.json")).output == "{\"b\": 2}")

        let sub = fs.child("sub")!
        let gone = fs.child("n0.txt", of: sub)!
        #expect(try tool("stat", mount.file("sub/n0.txt")).status == 0)
        try fs.unlink(parent: sub, name: "n0.txt", context: RequestContext(uid: 0, gid: 0, pid: 0))
        invalidator.notifyDelete(parent: sub, child: gone, name: "n0.txt")
        #expect(mount.eventually { mount.counters.count(of: .invalidations) == 4 })
        #expect(try tool("stat", mount.file("sub/n0.txt")).status != 0)
    }

    @Test func fusermountEndsRunAndWillUnmountIsCalledOnce() throws {
        let fs = Self.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }
        #expect(try tool("ls", mount.path).status == 0)
        #expect(try mount.unmount())
        #expect(fs.willUnmountCalls.load(ordering: .relaxed) == 1)
        #expect(mount.runError.withLock { $0 } == nil)
        #expect(try !String(contentsOfFile: "/proc/self/mounts", encoding: .utf8).contains(mount.path))
    }

    @Test func exitEndsRunFromAnotherThread() throws {
        let fs = Self.makeTree()
        let mount = try TestMount(fs)
        defer { mount.close() }
        #expect(try tool("cat", mount.file("alpha.txt")).output == "hello from alpha\n")
        mount.session.exit()
        #expect(mount.waitForRunToEnd(seconds: 10))
        #expect(fs.willUnmountCalls.load(ordering: .relaxed) == 1)
        #expect(mount.runError.withLock { $0 } == nil)
        #expect(try !String(contentsOfFile: "/proc/self/mounts", encoding: .utf8).contains(mount.path))
    }

    @Test func mountReportsAMissingMountPoint() throws {
        try requireFuse()
        let session = try FuseSession(
            fileSystem: MemoryFileSystem(), mountPoint: "/nonexistent/fusekit-\(UUID())",
            options: MountOptions(handlesSignals: false), counters: OperationCounters())
        #expect(throws: FuseError.self) { try session.mount() }
        do {
            try session.mount()
        } catch {
            #expect(error.message.contains("No such file or directory"), "\(error.message)")
        }
        #expect(!FuseSession.cleanUpStaleMount(at: NSTemporaryDirectory()))
    }

    @Test func unknownOptionsAreRejected() throws {
        #expect(throws: FuseError.self) {
            try FuseSession(
                fileSystem: MemoryFileSystem(), mountPoint: "/tmp",
                options: MountOptions(extraOptions: ["no_such_option"]), counters: OperationCounters())
        }
    }

    @Test func optionsBecomeArguments() {
        let options = MountOptions(readOnly: true, fsName: "a,b", debug: true, ioUring: false)
        #expect(
            options.arguments == [
                "storefs", "-o", "ro,auto_unmount,default_permissions,fsname=a\\,b,subtype=storefs", "-d"
            ])
        let ring = MountOptions(ioUring: true)
        #expect(
            ring.arguments == [
                "storefs", "-o", "auto_unmount,default_permissions,fsname=storefs,subtype=storefs,io_uring"
            ])
    }
}
