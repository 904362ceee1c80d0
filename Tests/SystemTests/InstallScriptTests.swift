import Foundation
import Testing

/// scripts/install.sh into a DESTDIR, then scripts/uninstall.sh: everything it installed goes,
/// and nothing else does.
@Suite struct InstallScriptTests {
    /// Every path under `root`, relative, sorted (folders end in "/").
    static func tree(_ root: String) -> [String] {
        guard let walker = FileManager.default.enumerator(atPath: root) else { return [] }
        var paths: [String] = []
        while let path = walker.nextObject() as? String {
            var isFolder: ObjCBool = false
            _ = FileManager.default.fileExists(atPath: root + "/" + path, isDirectory: &isFolder)
            paths.append(isFolder.boolValue ? path + "/" : path)
        }
        return paths.sorted()
    }

    @Test func uninstallRemovesExactlyWhatInstallPut() throws {
        let binary = try storefsBinary()
        let manPages = try generatedManPages()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.path + "/root"
        // Something of the administrator's, before install: it must survive uninstall.
        try FileManager.default.createDirectory(atPath: root + "/usr/local/bin", withIntermediateDirectories: true)
        try "#!/bin/sh\n".write(toFile: root + "/usr/local/bin/other-tool", atomically: true, encoding: .utf8)
        let before = Self.tree(root)

        let environment = ["DESTDIR": root, "BINARY": binary, "MANPAGES": manPages.path]
        let install = try run(
            "/bin/sh", [packageRoot.appendingPathComponent("scripts/install.sh").path], environment: environment)
        try #require(install.succeeded, "install.sh: \(install.errorOutput)")
        let installed = Set(Self.tree(root)).subtracting(before)
        var expectedFiles = [
            "usr/local/bin/storefs", "etc/systemd/system/storefs@.service", "etc/storefs/",
            "usr/local/share/doc/storefs/example.conf", "usr/local/share/doc/storefs/PRODUCTION.md",
            "usr/local/share/doc/storefs/SEMANTICS.md", "usr/local/share/doc/storefs/README.md",
            // The statically linked libfuse: where it comes from and its licence (LGPL-2.1).
            "usr/local/share/doc/storefs/LIBFUSE.md", "usr/local/share/doc/storefs/LGPL2.txt",
            "usr/local/share/bash-completion/completions/storefs", "usr/local/share/zsh/site-functions/_storefs",
            "usr/local/share/fish/vendor_completions.d/storefs.fish", "usr/local/share/doc/storefs/LICENSE",
            "usr/local/share/man/man8/mount.fuse.storefs.8"
        ]
        expectedFiles += try installScriptHelpers().map { "sbin/" + $0.installedName }
        expectedFiles += try manPageNames(in: manPages).map { "usr/local/share/man/man1/" + $0 }
        for expected in expectedFiles {
            #expect(installed.contains(expected), "install.sh did not install \(expected)")
        }
        #expect(try manPageNames(in: manPages).contains("storefs.mount.1"))
        let completion = try String(
            contentsOfFile: root + "/usr/local/share/bash-completion/completions/storefs", encoding: .utf8)
        #expect(completion.contains("-F _storefs storefs"), "not a bash completion: \(completion.prefix(200))")
        #expect(FileManager.default.isExecutableFile(atPath: root + "/sbin/mount.fuse.storefs"))
        #expect(
            FileManager.default.contentsEqual(atPath: binary, andPath: root + "/usr/local/bin/storefs"),
            "the binary installed is the one given as BINARY")
        let helper = try String(contentsOfFile: root + "/sbin/mount.fuse.storefs", encoding: .utf8)
        #expect(helper.contains("STOREFS=\"${STOREFS:-/usr/local/bin/storefs}\""))
        #expect(install.output.contains("skipped systemctl daemon-reload"), "DESTDIR installs never reload systemd")
        // The binary is installed as built: install says which toolchain's runtime it needs.
        let runtime = try run("ldd", [binary]).output.split(separator: "\n").first { $0.contains("libswiftCore.so") }
        let runtimeFolder = try #require(runtime?.split(separator: " ").first { $0.hasPrefix("/") }).split(
            separator: "/"
        ).dropLast()
            .joined(separator: "/")
        #expect(
            install.output.contains(
                "storefs loads the Swift runtime from /\(runtimeFolder): keep that toolchain installed"),
            "install.sh names the runtime the binary needs: \(install.output)")
        #expect(
            try String(contentsOfFile: root + "/usr/local/share/doc/storefs/LICENSE", encoding: .utf8)
                == String(contentsOf: packageRoot.appendingPathComponent("LICENSE"), encoding: .utf8))

        // An administrator's configuration, added after install, stays with its folder.
        try "STORE=/srv/a.sqlite\n".write(toFile: root + "/etc/storefs/library.conf", atomically: true, encoding: .utf8)
        let uninstall = try run(
            "/bin/sh", [packageRoot.appendingPathComponent("scripts/uninstall.sh").path], environment: ["DESTDIR": root]
        )
        try #require(uninstall.succeeded, "uninstall.sh: \(uninstall.errorOutput)")
        #expect(Self.tree(root) == (before + ["etc/", "etc/storefs/", "etc/storefs/library.conf"]).sorted())

        try FileManager.default.removeItem(atPath: root + "/etc")
        #expect(Self.tree(root) == before, "uninstall left or took something")
    }

    @Test func prefixAndBindirMoveTheBinaryAndThePathsThatNameIt() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let root = scratch.path + "/root"
        let environment = ["DESTDIR": root, "BINARY": try storefsBinary(), "PREFIX": "/opt/storefs"]
        let install = try run(
            "/bin/sh", [packageRoot.appendingPathComponent("scripts/install.sh").path], environment: environment)
        try #require(install.succeeded, "install.sh: \(install.errorOutput)")
        #expect(FileManager.default.isExecutableFile(atPath: root + "/opt/storefs/bin/storefs"))
        let unit = try String(contentsOfFile: root + "/etc/systemd/system/storefs@.service", encoding: .utf8)
        #expect(unit.contains("ExecStart=/opt/storefs/bin/storefs mount --foreground"))
        let helper = try String(contentsOfFile: root + "/sbin/mount.fuse.storefs", encoding: .utf8)
        #expect(helper.contains("${STOREFS:-/opt/storefs/bin/storefs}"))
        let uninstall = try run(
            "/bin/sh", [packageRoot.appendingPathComponent("scripts/uninstall.sh").path], environment: environment)
        try #require(uninstall.succeeded, "uninstall.sh: \(uninstall.errorOutput)")
        #expect(Self.tree(root).isEmpty, "left behind: \(Self.tree(root))")
    }
}
