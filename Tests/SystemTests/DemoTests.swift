import Foundation
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// `storefs demo`, and the README's examples, which are written against the store it mounts: the
/// commands the demo suggests work, and every example line in the README shows what it says.
@Suite struct DemoTests {
    /// A running `storefs demo` on a scratch mount point; its stdout in `output`.
    struct RunningDemo {
        let process: Process
        let scratch: Scratch
        var output: String { (try? String(contentsOfFile: scratch.path + "/demo.out", encoding: .utf8)) ?? "" }

        init() throws {
            scratch = try Scratch()
            let log = scratch.path + "/demo.out"
            _ = FileManager.default.createFile(atPath: log, contents: nil)
            process = Process()
            process.executableURL = URL(fileURLWithPath: try storefsBinary())
            process.arguments = ["demo", scratch.mountPoint]
            process.standardInput = FileHandle.nullDevice
            process.standardOutput = try FileHandle(forWritingTo: URL(fileURLWithPath: log))
            process.standardError = process.standardOutput
            try process.run()
            let started = self
            guard eventually(timeout: 120, { started.output.contains("Press Ctrl-C") || !started.process.isRunning }),
                process.isRunning
            else {
                let output = output
                if process.isRunning { kill(process.processIdentifier, SIGINT) }
                _ = waitForExit(process, timeout: 30)
                scratch.remove()
                throw SystemTestError("storefs demo did not get ready: \(output)")
            }
        }

        /// Runs a command line of the README or the demo, with /tmp/storefs-demo moved to this mount.
        func shell(_ line: String) throws -> ToolResult {
            try run("/bin/sh", ["-c", line.replacingOccurrences(of: "/tmp/storefs-demo", with: scratch.mountPoint)])
        }

        /// Ctrl-C: the demo unmounts and deletes its store.
        func stop() throws {
            kill(process.processIdentifier, SIGINT)
            guard waitForExit(process, timeout: 60) else { throw SystemTestError("storefs demo did not end on SIGINT") }
        }
    }

    /// The README's block of demo examples: `(command, comment)` for each line of the first sh
    /// block after "`scripts/demo`".
    static func readmeExamples() throws -> [(command: String, comment: String)] {
        let text = try String(contentsOf: packageRoot.appendingPathComponent("README.md"), encoding: .utf8)
        guard let start = text.range(of: "`scripts/demo` says"),
            let open = text.range(of: "```sh\n", range: start.upperBound..<text.endIndex),
            let close = text.range(of: "```", range: open.upperBound..<text.endIndex)
        else { throw SystemTestError("README.md has no sh block of demo examples after \"`scripts/demo` says\"") }
        return text[open.upperBound..<close.lowerBound].split(separator: "\n").map { line in
            let parts = line.split(separator: "#", maxSplits: 1)
            return (
                String(parts[0]).trimmingCharacters(in: .whitespaces),
                parts.count > 1 ? String(parts[1]).trimmingCharacters(in: .whitespaces) : ""
            )
        }
    }

    @Test func everyREADMEExampleShowsWhatItSays() throws {
        let examples = try Self.readmeExamples()
        #expect(examples.count >= 5, "README examples: \(examples)")
        let demo = try RunningDemo()
        defer {
            try? demo.stop()
            demo.scratch.remove()
        }
        for (command, comment) in examples {
            let result = try demo.shell(command)
            #expect(result.succeeded, "\(command): \(result.errorOutput)")
            let words = result.output.split(whereSeparator: \.isWhitespace).joined(separator: " ")
            if command.hasPrefix("ls -l ") {
                // "attributes are files, relationships are links": both kinds, and folders for to-many.
                let kinds = Set(result.output.split(separator: "\n").compactMap(\.first))
                #expect(
                    kinds.isSuperset(of: ["-", "l", "d"]), "\(command) shows files, links and folders: \(result.output)"
                )
            } else if command.hasPrefix("getfattr") {
                #expect(result.output.contains("user.NSStoreType=\"SQLite\""), "\(command): \(result.output)")
            } else if command.hasPrefix("ls ") || command.hasPrefix("cat ") || command.hasPrefix("readlink ") {
                // The comment is the output, perhaps followed by a note in parentheses.
                let expected = comment.components(separatedBy: " (").first ?? comment
                #expect(words == expected, "\(command) printed \(words), the README says \(expected)")
            }
        }
    }

    @Test func everyCommandTheDemoSuggestsWorksAndCtrlCCleansUp() throws {
        let demo = try RunningDemo()
        defer { demo.scratch.remove() }
        let output = demo.output
        let store = try #require(
            output.split(separator: "\n").first { $0.hasPrefix("storefs demo: writing") }?.split(separator: " ").last
                .map(String.init),
            "the demo says where its store is: \(output)")
        #expect(FileManager.default.fileExists(atPath: store))
        guard
            let tries = output.components(separatedBy: "Try, in another terminal:\n").last?
                .components(separatedBy: "\n\nPress Ctrl-C").first
        else { throw SystemTestError("no commands to try in: \(output)") }
        let commands = tries.split(separator: "\n").map { String($0.split(separator: "#").first ?? "") }
            .map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty }
        #expect(commands.count >= 10, "the demo suggests: \(tries)")
        for command in commands {
            #expect(command.contains(demo.scratch.mountPoint), "\(command) is not about the demo's mount")
            let result = try demo.shell(command)
            #expect(
                result.succeeded && !result.output.isEmpty || command.hasPrefix("echo "),
                "\(command): \(result.errorOutput)")
        }
        // The example object is an Employee's own folder (not a link to a Manager's).
        let employee = try #require(commands.first { $0.hasPrefix("ls -l ") && $0.contains("/Employee/") })
        let folder = String(employee.dropFirst("ls -l ".count))
        var info = stat()
        #expect(lstat(folder, &info) == 0 && info.st_mode & S_IFMT == S_IFDIR, "\(folder) is not a folder")

        try demo.stop()
        #expect(demo.process.terminationStatus == 0, "demo: \(demo.output)")
        #expect(!isMounted(demo.scratch.mountPoint))
        #expect(!FileManager.default.fileExists(atPath: store), "the demo left its store \(store)")
    }
}
