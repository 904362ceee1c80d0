import Foundation
import Testing

/// scripts/package builds a .deb that dpkg installs and removes cleanly, with which
/// `mount -t fuse.storefs` works.
///
/// It installs into the real system (dpkg -i, then dpkg --purge), so it runs in MountHelperTests'
/// serialized suite: both put a /sbin/mount.fuse.storefs in place, and must not overlap.
extension MountHelperTests {
    /// Builds the package from the debug binary and the generated man pages, into `folder`.
    static func buildPackage(into folder: String) throws -> String {
        let result = try run(
            packageRoot.appendingPathComponent("scripts/package").path, [folder],
            environment: [
                "BINARY": try storefsBinary(), "MANPAGES": try generatedManPages().path, "COMPRESSION": "none"
            ])
        guard result.succeeded else { throw SystemTestError("scripts/package failed: \(result.errorOutput)") }
        let deb = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        guard deb.hasSuffix(".deb"), FileManager.default.fileExists(atPath: deb) else {
            throw SystemTestError("scripts/package printed \(result.output), not the path of a .deb")
        }
        return deb
    }

    @Test func theDebianPackageInstallsMountsAndRemovesCleanly() throws {
        let dpkg = try tool("dpkg", package: "dpkg")
        let dpkgDeb = try tool("dpkg-deb", package: "dpkg")
        let mount = try tool("mount", package: "mount")
        let umount = try tool("umount", package: "mount")
        let man = try tool("man", package: "man-db")
        if try run(dpkg, ["-s", "storefs"]).succeeded {
            throw SystemTestError(
                "a storefs package is installed here; this test installs and removes its own (dpkg -r storefs first)")
        }
        for path in ["/usr/bin/storefs", "/sbin/mount.fuse.storefs"] where FileManager.default.fileExists(atPath: path)
        {
            throw SystemTestError("\(path) exists and the package would replace it; remove it first")
        }
        let scratch = try Scratch()
        defer { scratch.remove() }
        try scratch.makeStore()
        let stored = try storedLastName(scratch.store)
        let deb = try Self.buildPackage(into: scratch.path + "/out")

        let control = try run(dpkgDeb, ["-f", deb, "Package", "Version", "Depends"]).output
        #expect(control.contains("Package: storefs"))
        #expect(
            control.contains(
                "Version: "
                    + (try run(try storefsBinary(), ["--version"]).output.split(separator: " ").last ?? "?")
                    .trimmingCharacters(in: .whitespacesAndNewlines)))
        for dependency in ["fuse3", "liburing2", "libnuma1", "libsqlite3-0"] {
            #expect(control.contains(dependency), "Depends lacks \(dependency): \(control)")
        }

        let installed = try run(dpkg, ["-i", deb])
        try #require(installed.succeeded, "dpkg -i: \(installed.output) \(installed.errorOutput)")
        var purged = false
        defer { if !purged { _ = try? run(dpkg, ["--purge", "storefs"]) } }
        let listed = try run(dpkg, ["-L", "storefs"]).output.split(separator: "\n").map(String.init)

        var expected = [
            "/usr/bin/storefs", "/lib/systemd/system/storefs@.service", "/etc/storefs",
            "/usr/share/bash-completion/completions/storefs", "/usr/share/zsh/vendor-completions/_storefs",
            "/usr/share/fish/vendor_completions.d/storefs.fish", "/usr/share/doc/storefs/README.md",
            "/usr/share/doc/storefs/PRODUCTION.md", "/usr/share/doc/storefs/SEMANTICS.md",
            "/usr/share/doc/storefs/example.conf"
        ]
        expected += try installScriptHelpers().map { "/sbin/" + $0.installedName }
        expected += try manPageNames(in: try generatedManPages()).map { "/usr/share/man/man1/\($0).gz" }
        expected += ["/usr/share/man/man8/mount.fuse.storefs.8.gz", "/usr/share/doc/storefs/copyright"]
        for path in expected {
            #expect(listed.contains(path), "the package lacks \(path)")
            #expect(FileManager.default.fileExists(atPath: path), "dpkg -i did not put \(path)")
        }
        // The Swift runtime comes with the package, and the binary looks for it there alone.
        #expect(listed.contains("/usr/lib/storefs/libswiftCore.so"), "the package lacks the Swift runtime")
        let libraries = try run(try tool("ldd", package: "libc-bin"), ["/usr/bin/storefs"]).output
        #expect(libraries.contains("/usr/bin/../lib/storefs/libswiftCore.so"), "ldd /usr/bin/storefs: \(libraries)")
        #expect(
            !libraries.contains("/opt/swift") && !libraries.contains("not found"), "ldd /usr/bin/storefs: \(libraries)")
        #expect(try run("/usr/bin/storefs", ["--version"]).output.hasPrefix("storefs "))
        let helper = try String(contentsOfFile: "/sbin/mount.fuse.storefs", encoding: .utf8)
        #expect(helper.contains("STOREFS=\"${STOREFS:-/usr/bin/storefs}\""), "the helper runs the packaged binary")
        let unit = try String(contentsOfFile: "/lib/systemd/system/storefs@.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/usr/bin/storefs mount --foreground"))
        #expect(unit.contains("/usr/share/doc/storefs/PRODUCTION.md"))
        let page = try run(man, ["-w", "storefs.mount"])
        #expect(
            page.output.trimmingCharacters(in: .newlines) == "/usr/share/man/man1/storefs.mount.1.gz", "man -w: \(page)"
        )
        let helperPage = try run(man, ["-w", "mount.fuse.storefs"])
        #expect(
            helperPage.output.trimmingCharacters(in: .newlines) == "/usr/share/man/man8/mount.fuse.storefs.8.gz",
            "man -w: \(helperPage)")
        // The licence, in Debian's copyright file (machine-readable), with the licence's own text.
        let copyright = try String(contentsOfFile: "/usr/share/doc/storefs/copyright", encoding: .utf8)
        let licence = try String(contentsOf: packageRoot.appendingPathComponent("LICENSE"), encoding: .utf8)
        #expect(copyright.hasPrefix("Format: https://www.debian.org/doc/packaging-manuals/copyright-format/1.0/"))
        #expect(
            copyright.contains("Files: *\nCopyright: 2026 the storefs developers\nLicense: MIT\n"),
            "\(copyright.prefix(400))")
        let indented = licence.split(separator: "\n", omittingEmptySubsequences: false).dropLast()
            .map { $0.isEmpty ? " ." : " " + $0 }.joined(separator: "\n")
        #expect(
            copyright.hasSuffix("License: MIT\n" + indented + "\n"), "the copyright file ends with the licence's text")
        #expect(licence.hasPrefix("MIT License"))
        #expect(
            !listed.contains("/usr/share/doc/storefs/LICENSE"), "the licence is in the copyright file, not beside it")

        // mount(8) finds the packaged helper, which runs the packaged binary.
        let log = scratch.path + "/storefs.log"
        let mounted = try run(
            mount, ["-t", "fuse.storefs", scratch.store, scratch.mountPoint, "-o", "ro,log_file=\(log)"])
        #expect(mounted.succeeded, "mount -t fuse.storefs: \(mounted.errorOutput)")
        #expect(mountType(scratch.mountPoint) == "fuse.storefs")
        #expect(try run("/bin/cat", [scratch.mountPoint + "/Employee/p6/lastName"]).output == stored + "\n")
        #expect(try run(umount, [scratch.mountPoint]).succeeded)
        #expect(!isMounted(scratch.mountPoint))

        let removed = try run(dpkg, ["--purge", "storefs"])
        purged = true
        #expect(removed.succeeded, "dpkg --purge: \(removed.errorOutput)")
        #expect(!(try run(dpkg, ["-s", "storefs"]).succeeded), "still known to dpkg after --purge")
        for path in listed where path.contains("storefs") && FileManager.default.fileExists(atPath: path) {
            Issue.record("dpkg --purge left \(path)")
        }
    }
}
