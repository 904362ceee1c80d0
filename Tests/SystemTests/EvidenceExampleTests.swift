import Foundation
import Testing

/// The README's evidence example works as written: run line by line (its /tmp/case moved to a
/// scratch folder, `storefs` the binary under test), every command succeeds, the store checks
/// out against the hashes taken before, and the copy the patch was applied to shows the edit.
@Suite struct EvidenceExampleTests {
    @Test func theREADMEsEvidenceExampleWorksAsWritten() throws {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        guard let section = text.range(of: "\n## Evidence\n"),
            let open = text.range(of: "```sh\n", range: section.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else { throw SystemTestError("README.md has no sh block under \"## Evidence\"") }
        let scratch = try Scratch()
        let folder = scratch.path + "/case"
        defer {
            if isMounted(folder + "/mnt") { _ = try? run("/usr/bin/fusermount3", ["-u", "-z", folder + "/mnt"]) }
            scratch.remove()
        }
        let script = String(text[open.upperBound..<close.lowerBound]).replacingOccurrences(
            of: "/tmp/case", with: folder)
        try FileManager.default.createDirectory(atPath: scratch.path + "/bin", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(
            atPath: scratch.path + "/bin/storefs", withDestinationPath: try storefsBinary())
        let path = scratch.path + "/bin:" + (ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin")
        let result = try run("/usr/bin/timeout", ["300", "/bin/sh", "-e", "-c", script], environment: ["PATH": path])
        #expect(result.status != 124, "the example did not finish within 300 s")
        #expect(result.succeeded, "\(result.errorOutput)\n\(result.output.suffix(1000))")
        #expect(
            result.output.contains("\(folder)/evidence/Company.sqlite: OK"),
            "sha256sum -c: \(result.output.suffix(600))")
        #expect(result.output.contains("\"sha256\""), "user.storefs.evidence lists the hashes")
        #expect(result.output.hasSuffix("Hopper\n"), "the copy shows the edit: \(result.output.suffix(300))")
        #expect(!isMounted(folder + "/mnt"), "the example unmounts what it mounts")
    }
}
