import Foundation
import Testing

/// The manual pages say what the commands do at the end too: each page's EXIT STATUS lists the
/// statuses its command exits with (75 where changes can be kept in a recovery file), and the
/// mount helper has a page of its own.
@Suite struct ManPageTests {
    /// A page as man shows it, plain text.
    func rendered(_ page: URL) throws -> String {
        let result = try run("sh", ["-c", "MANWIDTH=200 timeout 60 man -l '\(page.path)' | col -b"])
        guard result.succeeded else { throw SystemTestError("man -l \(page.path): \(result.errorOutput)") }
        return result.output
    }

    /// The EXIT STATUS section: its lines, trimmed (up to the next section or the footer).
    func exitStatus(_ text: String) -> [String] {
        let lines = text.split(separator: "\n").map { String($0) }
        guard let start = lines.firstIndex(where: { $0 == "EXIT STATUS" }) else { return [] }
        return lines[(start + 1)...].prefix { $0.first == " " || $0.first == "\t" }
            .map { $0.trimmingCharacters(in: .whitespaces) }
    }

    /// The statuses the section lists: the numbers its entries start with.
    func codes(_ section: [String]) -> Set<String> {
        Set(
            section.compactMap { line in line.split(whereSeparator: \.isWhitespace).first.map(String.init) }.filter {
                Int($0) != nil
            })
    }

    @Test(arguments: ["storefs.1", "storefs.mount.1", "storefs.unmount.1"])
    func pagesOfCommandsThatKeepChangesInARecoveryFileList75(page: String) throws {
        let text = try rendered(try generatedManPages().appendingPathComponent(page))
        let statuses = exitStatus(text)
        #expect(
            codes(statuses).contains("75") && statuses.joined(separator: " ").contains("recovery file"),
            "\(page): \(statuses)")
        #expect(!text.contains(">0 if an error occurs"), "the generator's generic sentence is replaced")
    }

    @Test func everyGeneratedPageListsItsStatusesAndRendersWithoutWarnings() throws {
        let folder = try generatedManPages()
        for name in try manPageNames(in: folder) {
            let statuses = exitStatus(try rendered(folder.appendingPathComponent(name)))
            #expect(codes(statuses).isSuperset(of: ["0", "1", "64"]), "\(name): \(statuses)")
            let lint = try run(
                "sh", ["-c", "timeout 60 groff -mandoc -ww -z '\(folder.appendingPathComponent(name).path)'"])
            #expect(lint.succeeded && lint.errorOutput.isEmpty, "\(name): \(lint.errorOutput)")
        }
    }

    @Test func theMountHelperHasAPageThatSaysWhatItTakesAndHowItExits() throws {
        let page = packageRoot.appendingPathComponent("scripts/mount.fuse.storefs.8")
        let lint = try run("sh", ["-c", "timeout 60 groff -mandoc -ww -z '\(page.path)'"])
        #expect(lint.succeeded && lint.errorOutput.isEmpty, "\(lint.errorOutput)")
        let text = try rendered(page)
        #expect(text.contains("mount.fuse.storefs store mountpoint [-sfnv] [-o options]"), "\(text.prefix(600))")
        #expect(text.contains("log_file=path"))
        let script = try String(
            contentsOf: packageRoot.appendingPathComponent("scripts/mount.storefs"), encoding: .utf8)
        // Every status the script exits with is on the page, and the page names no other.
        let exits = Set(script.matches(of: /exit (\d+)/).map { String($0.1) })
        let listed = codes(exitStatus(text))
        #expect(exits == listed, "script exits with \(exits.sorted()), page lists \(listed.sorted())")
    }
}
