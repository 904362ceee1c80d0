import Foundation
import Testing

/// `user.storefs.stats` counts the getxattr calls that read it, so it grows between a reader's
/// size query and its read. getfattr (and every tool that asks the size first) then got ERANGE
/// whenever a count gained a digit in between: a `getfattr` of the stats failed with empty output
/// under load, where a RELEASE arriving late did the same.
@Suite struct StatsAttributeTests {
    /// getfattr reads the fresh mount's stats 600 times (its count passes 99 and 999; each
    /// getfattr is two counted calls, so a passing lands between its two with even odds). Then,
    /// deterministically, as getfattr does: ask the size, make 10,000 other requests (the count,
    /// near 1,200 by then, gains a digit), read with a buffer of the size asked.
    @Test func theCountersReadWithTheSizeAskedBeforeThemEvenAfterTheyGrew() throws {
        let mount = try MountedStore(objects: 20)
        defer { try? mount.unmount() }
        let loop = try sh(
            "failed=0; for i in $(seq 1 600); do getfattr --only-values -n user.storefs.stats \(mount.path) "
                + ">/dev/null 2>&1 || failed=$((failed + 1)); done; echo $failed")
        #expect(loop.output == "0\n", "getfattr calls of the stats that failed: \(loop.output) \(loop.error)")

        let script = """
            import ctypes, os, sys
            libc = ctypes.CDLL(None, use_errno=True)
            path, name = sys.argv[1].encode(), b"user.storefs.stats"
            size = libc.getxattr(path, name, None, 0)
            assert size > 0, os.strerror(ctypes.get_errno())
            for _ in range(10000):
                libc.getxattr(path, b"user.none", None, 0)
            buffer = ctypes.create_string_buffer(size)
            got = libc.getxattr(path, name, buffer, size)
            print("read" if got > 0 else "failed: " + os.strerror(ctypes.get_errno()), size, got)
            """
        let answer = try run("python3", ["-c", script, mount.path]).output
        #expect(answer.hasPrefix("read "), "the stats read with the size asked before 10,000 requests: \(answer)")

        let stats = try mount.stats()
        let fuse = try #require(stats["fuse"] as? [String: Any])
        #expect((fuse["getxattr"] as? Int ?? 0) > 11_000, "the reads were counted: \(fuse)")
    }
}
