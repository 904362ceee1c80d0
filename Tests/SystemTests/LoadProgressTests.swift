import Foundation
import Testing

/// A large XML store is read whole before its mount exists: `storefs mount` shows how far the
/// load has come when it runs on a terminal, and stays quiet when it does not.
@Suite struct LoadProgressTests {
    /// An XML store of the sample company, made by `storefs sample` and `storefs migrate`.
    static func makeXMLStore(_ scratch: Scratch, objects: Int) throws -> String {
        try scratch.makeStore(objects: objects)
        let xml = scratch.path + "/Company.xml"
        let migrated = try run(try storefsBinary(), ["migrate", scratch.store, xml])
        guard migrated.succeeded else { throw SystemTestError("storefs migrate: \(migrated.errorOutput)") }
        return xml
    }

    /// The number of lines the loader counts: newlines plus one.
    static func lineCount(_ path: String) throws -> Int {
        try Data(contentsOf: URL(fileURLWithPath: path)).reduce(1) { $0 + ($1 == 0x0A ? 1 : 0) }
    }

    @Test(arguments: [false, true])
    func aMountOnATerminalDrawsTheLoadsProgress(foreground: Bool) throws {
        let script = try tool("script", package: "bsdutils")
        let scratch = try Scratch()
        defer { scratch.remove() }
        let xml = try Self.makeXMLStore(scratch, objects: 3_000)
        let lines = try Self.lineCount(xml)
        // In the background the log would go to the system log, or /var/log/storefs.log here: keep it in scratch.
        let arguments =
            ["mount"] + (foreground ? ["--foreground"] : ["--log-file", scratch.path + "/log"]) + [
                xml, scratch.mountPoint, "-o", "ro"
            ]
        let command = ([try storefsBinary()] + arguments).map(quoted).joined(separator: " ")
        // script(1) gives the command a terminal and copies what it writes there to stdout.
        let typescript = scratch.path + "/typescript"
        let server = Process()
        server.executableURL = URL(fileURLWithPath: script)
        server.arguments = ["-q", "-e", "-f", "-c", command, typescript]
        server.standardInput = FileHandle.nullDevice
        server.standardOutput = FileHandle.nullDevice
        try server.run()
        defer {
            if isMounted(scratch.mountPoint) { _ = try? run("/usr/bin/fusermount3", ["-u", scratch.mountPoint]) }
            _ = waitForExit(server, timeout: 30)
        }
        #expect(eventually { isMounted(scratch.mountPoint) }, "no mount; terminal: \(Self.text(typescript))")
        #expect(try run("/bin/ls", [scratch.mountPoint]).output.contains("Employee"))
        let finished = "loading Company.xml [\(String(repeating: "#", count: 30))] \(lines)/\(lines) lines"
        // In the background, `storefs mount` draws the end of the load as it returns.
        #expect(
            eventually(timeout: 10) { Self.text(typescript).contains(finished) },
            "the terminal showed: \(Self.text(typescript))")
    }

    @Test func aMountWithoutATerminalDrawsNothing() throws {
        let scratch = try Scratch()
        defer { scratch.remove() }
        let xml = try Self.makeXMLStore(scratch, objects: 1_000)
        let mounted = try run(
            try storefsBinary(), ["mount", xml, scratch.mountPoint, "-o", "ro", "--log-file", scratch.path + "/log"])
        defer { _ = try? run("/usr/bin/fusermount3", ["-u", scratch.mountPoint]) }
        #expect(mounted.succeeded, "\(mounted.errorOutput)")
        #expect(
            mounted.errorOutput.isEmpty && mounted.output.isEmpty, "printed: \(mounted.output) \(mounted.errorOutput)")
    }

    static func text(_ path: String) -> String { (try? String(contentsOfFile: path, encoding: .utf8)) ?? "" }
}
