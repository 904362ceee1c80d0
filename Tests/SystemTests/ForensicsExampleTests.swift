import Foundation
import Testing

/// docs/FORENSICS.md's example works as written: run line by line (its /tmp/forensics moved to a
/// scratch folder, `storefs` the binary under test), every command succeeds, the deleted people
/// are recovered with their names and where they were found, the WAL's versions show the rename,
/// and the evidence is byte-identical afterwards.
@Suite struct ForensicsExampleTests {
    @Test func theForensicsExampleWorksAsWritten() throws {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/FORENSICS.md"), encoding: .utf8)
        guard let section = text.range(of: "\n## Try it\n"),
            let open = text.range(of: "```sh\n", range: section.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else { throw SystemTestError("docs/FORENSICS.md has no sh block under \"## Try it\"") }
        let scratch = try Scratch()
        let folder = scratch.path + "/forensics"
        defer {
            if isMounted(folder + "/mnt") { _ = try? run("/usr/bin/fusermount3", ["-u", "-z", folder + "/mnt"]) }
            scratch.remove()
        }
        let script = String(text[open.upperBound..<close.lowerBound]).replacingOccurrences(
            of: "/tmp/forensics", with: folder)
        try FileManager.default.createDirectory(atPath: scratch.path + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.path + "/bin/storefs", withDestinationPath: try storefsBinary())
        let path = scratch.path + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try run("/usr/bin/timeout", ["300", "/bin/sh", "-e", "-c", script], environment: ["PATH": path])
        #expect(result.status != 124, "the example did not finish within 300 s")
        #expect(result.succeeded, "\(result.errorOutput)\n\(result.output.suffix(1000))")
        let output = result.output
        for key in ["p3-", "p4-", "p5-", "p6-"] {
            #expect(
                output.contains("\n\(key)") || output.hasPrefix(key),
                "ls .recovered/Manager lists \(key)…: \(output.prefix(400))")
        }
        #expect(output.contains("Lamarr\n"), "the deleted p3's lastName")
        #expect(
            output.contains("(replaced by WAL commit 1): cell at offset"),
            "user.recovered.source: \(output.prefix(800))")
        #expect(output.contains("lastName\n"), "user.recovered.differences of p6")
        #expect(output.contains("c0\nc1\nc2\n"), ".wal lists the versions")
        #expect(output.contains("Turing\nHopper\n"), "c0 and c2 show p6's rename")
        #expect(output.contains(#""@live":"deleted""#), "export --recovered")
        #expect(output.contains("|r/r---------|0|0|0|"), "a body file")
        #expect(output.contains("~ Manager/p6\n    lastName: \"Turing\" -> \"Hopper\""), "diff @c0 @c2")
        #expect(output.contains("\(folder)/evidence/Company.sqlite: OK"), "sha256sum -c: \(output.suffix(300))")
        #expect(output.contains("\(folder)/evidence/Company.sqlite-wal: OK"))
        #expect(!output.contains("FAILED"))
        #expect(!isMounted(folder + "/mnt"), "the example unmounts what it mounts")
        let left = try FileManager.default.contentsOfDirectory(atPath: folder + "/evidence").sorted()
        #expect(left == ["Company.sqlite", "Company.sqlite-wal"], "nothing made beside the evidence: \(left)")
    }
}
