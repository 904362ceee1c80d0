import Foundation
import Testing

/// What the README tells a new user, held to what the tools do.
@Suite struct ReadmeTests {
    static func readme() throws -> String {
        try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
    }

    /// Every command after the demo says `storefs`: the README puts the built binary on PATH
    /// before the first one, and its line does.
    @Test func theREADMEPutsTheBuiltBinaryOnPATHBeforeItsFirstStorefsCommand() throws {
        let text = try Self.readme()
        let line = "export PATH=\"$PWD/.build/debug:$PATH\""
        let instruction = try #require(text.range(of: "`\(line)`"), "the README says how to put storefs on PATH")
        // The first command line of a sh block that runs storefs.
        var firstCommand: String.Index?
        var searched = text.startIndex
        while firstCommand == nil, let open = text.range(of: "```sh\n", range: searched..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        {
            firstCommand =
                text.range(
                    of: #"(^|\n|&& )storefs [a-z]"#, options: .regularExpression,
                    range: open.upperBound..<close.lowerBound)?
                .lowerBound
            searched = close.upperBound
        }
        let first = try #require(firstCommand, "the README has storefs commands")
        #expect(instruction.lowerBound < first, "PATH is set before the first storefs command")
        let build = packageRoot.appendingPathComponent(".build/debug/storefs").path
        guard FileManager.default.isExecutableFile(atPath: build) else {
            throw SystemTestError("\(build) is missing: run `swift build` in \(packageRoot.path) first")
        }
        let result = try run(
            "/bin/sh", ["-c", "cd \(quoted(packageRoot.path)) && PATH=/usr/bin:/bin && \(line) && storefs --version"])
        #expect(result.succeeded && result.output.hasPrefix("storefs "), "\(result.errorOutput)")
    }

    /// `fusermount3 -u` returns before the store is written (the server commits after the
    /// kernel let go of the mount): `storefs mount --help` and the README say the same.
    @Test func mountsHelpAndTheREADMESayTheSameOfFusermount() throws {
        let help = try run(try storefsBinary(), ["mount", "--help"]).output.split(whereSeparator: \.isWhitespace)
            .joined(separator: " ")
        #expect(help.contains("returns before the store is written"), "\(help)")
        #expect(!help.contains("fusermount3 -u MOUNTPOINT` (or SIGTERM) commits pending changes and unmounts"))
        let readme = try Self.readme().split(whereSeparator: \.isWhitespace).joined(separator: " ")
        #expect(readme.contains("returns before the store is written"))
    }

    /// The README's way to read a man page before installing works: the folder it names is the
    /// one scripts/manpages writes, and `man -l` renders a page from it.
    @Test func theREADMEsManPagesBeforeInstallingAreThere() throws {
        let readme = try Self.readme()
        let page = ".build/plugins/GenerateManual/outputs/storefs/storefs.mount.1"
        #expect(readme.contains("`man -l \(page)`"))
        let folder = try generatedManPages()
        #expect(folder.appendingPathComponent("storefs.mount.1").path == packageRoot.appendingPathComponent(page).path)
        let rendered = try run("sh", ["-c", "cd \(quoted(packageRoot.path)) && MANWIDTH=100 timeout 60 man -l \(page)"])
        #expect(rendered.succeeded && rendered.output.contains("storefs"), "\(rendered.errorOutput)")
    }
}
