import Foundation
import Testing

/// docs/HEALTH.md's examples run as written: every `sh` block, in order, in one shell that stops
/// at the first failing command, from the repository's root with the storefs just built on the
/// PATH; and what the page says they print is what they print.
@Suite struct HealthDocTests {
    @Test func healthExamplesWorkAsWritten() throws {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/HEALTH.md"), encoding: .utf8)
        var blocks: [String] = []
        var rest = text[...]
        while let open = rest.range(of: "```sh\n"),
            let close = rest.range(of: "\n```", range: open.upperBound..<rest.endIndex)
        {
            blocks.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        #expect(blocks.count >= 4, "the page has its examples")
        let binary = URL(fileURLWithPath: try storefsBinary()).deletingLastPathComponent().path
        let script = "set -e\nexport PATH=\(binary):$PATH\ncd \(packageRoot.path)\n" + blocks.joined(separator: "\n")
        let result = try run("/usr/bin/timeout", ["600", "bash", "-c", script])
        defer { try? FileManager.default.removeItem(atPath: "/tmp/storefs-health") }
        #expect(result.succeeded, "the examples failed (\(result.status)):\n\(result.output)\n\(result.errorOutput)")
        // What the page quotes.
        for line in [
            "orphans:    toOne 90, toMany 0, externalData 0, rows 0, unowned 0",
            "  toOne Manager.headOf (ZPERSON.ZHEADOF): 1, e.g. p1", "to-one orphans: 90",
            "  unowned Project.department: 4, e.g. p1, p2, p3, p4",
            "repaired:   4 objects whose owner was gone deleted; 10 objects deleted with them (cascade)"
        ] {
            #expect(result.output.contains(line + "\n"), "\(line)\n---\n\(result.output)")
        }
        #expect(result.output.hasSuffix("healthy\n1\n"), "the last examination is healthy, one transaction stays")
    }
}
