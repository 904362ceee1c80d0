import Foundation
import Testing

/// docs/MIGRATION.md's examples of model migration run as written: every `sh` block from the
/// section "Between model versions" on, in order, in one shell that stops at the first failing
/// command, from the repository's root with the storefs just built on the PATH.
@Suite struct MigrationDocTests {
    @Test func modelMigrationExamplesWorkAsWritten() throws {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("docs/MIGRATION.md"), encoding: .utf8)
        let section = try #require(
            text.range(of: "## Between model versions"), "MIGRATION.md has its model migration section")
        var blocks: [String] = []
        var rest = text[section.upperBound...]
        while let open = rest.range(of: "```sh\n"),
            let close = rest.range(of: "\n```", range: open.upperBound..<rest.endIndex)
        {
            blocks.append(String(rest[open.upperBound..<close.lowerBound]))
            rest = rest[close.upperBound...]
        }
        #expect(blocks.count >= 6, "the section has its examples")
        let binary = URL(fileURLWithPath: try storefsBinary()).deletingLastPathComponent().path
        let script = "set -e\nexport PATH=\(binary):$PATH\ncd \(packageRoot.path)\n" + blocks.joined(separator: "\n")
        let result = try run("/usr/bin/timeout", ["600", "bash", "-c", script])
        #expect(result.succeeded, "the examples failed (\(result.status)):\n\(result.output)\n\(result.errorOutput)")
        #expect(
            result.output.components(separatedBy: "refused").count == 3, "the two refusals happen: \(result.output)")
        #expect(result.errorOutput.contains("entities added: Color; changed: Post"), "\(result.errorOutput)")
        #expect(
            result.errorOutput.contains("CoreDataMigration_Example.Post2ToPost3MigrationPolicy"),
            "\(result.errorOutput)")
        #expect(result.output.contains("6343E2\n"), "the read-only mount reads version 1's attribute")
        #expect(result.output.contains("lightweight migration: not possible"), "\(result.output)")
        #expect(!result.output.contains("differs from the store's"), "\(result.output)")
    }
}
