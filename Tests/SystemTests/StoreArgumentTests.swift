import Foundation
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// What every command does with the stores and files it is given, run as a user runs it: a file
/// that is not a regular file is refused at once (a FIFO used to hang info, export and mount, and
/// leave a background server blocked forever); a PostgreSQL URL is taken wherever a store is, and
/// its password never shows (in output, errors, logs, /proc/mounts or the server's command line);
/// a failed write of the output is an error.
@Suite struct StoreArgumentTests {
    /// Seconds a command may take to refuse its input: ample for a debug binary on a busy
    /// machine, far below a hang (which fails the test with the command named).
    static let refusalTimeout: TimeInterval = 60

    static func storefs(_ arguments: [String], timeout: TimeInterval = refusalTimeout) throws -> ToolResult {
        let result = try runTool(try storefsBinary(), arguments, timeout: timeout)
        return ToolResult(status: result.status, output: result.output, errorOutput: result.error)
    }

    /// A scratch folder with a store (Library.sqlite), a FIFO with a store's name (Named.sqlite),
    /// a FIFO without a suffix (fifo), an empty patch and a mount point.
    struct Inputs {
        let scratch: Scratch
        var store: String { scratch.store }
        var fifo: String { scratch.path + "/Named.sqlite" }
        var bareFIFO: String { scratch.path + "/fifo" }
        var patch: String { scratch.path + "/empty.patch.json" }

        init() throws {
            scratch = try Scratch()
            try scratch.makeStore()
            for path in [scratch.path + "/Named.sqlite", scratch.path + "/fifo"] {
                guard mkfifo(path, 0o600) == 0 else {
                    throw SystemTestError("mkfifo \(path): \(String(cString: strerror(errno)))")
                }
            }
            let patch = """
                {"storefs": "patch", "version": 1, "store": "x", "storeUUID": "", "read": [], "written": "",
                 "objects": [], "toMany": [], "metadata": {}, "unsaved": []}
                """
            try patch.write(toFile: scratch.path + "/empty.patch.json", atomically: true, encoding: .utf8)
        }

        /// `arguments` with FIFO, BARE, STORE, PATCH, MNT and DIR replaced by the paths.
        func resolve(_ arguments: [String]) -> [String] {
            arguments.map {
                switch $0 {
                case "FIFO": fifo
                case "BARE": bareFIFO
                case "STORE": store
                case "PATCH": patch
                case "MNT": scratch.mountPoint
                case "NEW": scratch.path + "/New.xml"
                default: $0
                }
            }
        }
    }

    // MARK: - Files that are not regular files

    @Test(arguments: [
        ["info", "FIFO"], ["info", "BARE"], ["info", "--json", "FIFO"], ["info", "--hashes", "FIFO"],
        ["info", "--evidence", "FIFO"], ["info", "--model", "FIFO", "STORE"], ["export", "FIFO"],
        ["export", "--evidence", "FIFO"], ["diff", "FIFO", "STORE"], ["diff", "STORE", "FIFO"], ["history", "FIFO"],
        ["model", "FIFO"], ["model", "--hashes", "FIFO"], ["model", "--diff", "FIFO", "STORE"],
        ["migrate", "FIFO", "NEW"], ["migrate", "--in-place", "FIFO", "--model", "sample"],
        ["migrate", "STORE", "NEW", "--model", "STORE", "--mapping", "FIFO"], ["apply", "PATCH", "FIFO"],
        ["apply", "FIFO", "STORE"], ["recover", "STORE", "FIFO"], ["mount", "FIFO", "MNT"],
        ["mount", "-o", "ro", "FIFO", "MNT"], ["mount", "-o", "evidence", "FIFO", "MNT"],
        ["mount", "BARE", "MNT", "--type", "sqlite"], ["info", "/dev/zero"], ["export", "/dev/null"],
        ["migrate", "STORE", "NEW", "--model", "STORE", "--mapping", "/dev/zero"]
    ])
    func aFileThatIsNotRegularIsRefusedAtOnce(arguments: [String]) throws {
        let inputs = try Inputs()
        defer { inputs.scratch.remove() }
        let command = inputs.resolve(arguments)
        let result = try Self.storefs(command)
        #expect(result.status != 0, "storefs \(command.joined(separator: " ")) succeeded: \(result.output)")
        let kind = arguments.contains("/dev/zero") || arguments.contains("/dev/null") ? "a character device" : "a FIFO"
        #expect(
            result.errorOutput.contains("is \(kind), not a regular file"),
            "storefs \(command.joined(separator: " ")) says why: \(result.errorOutput)")
        #expect(!result.errorOutput.contains("permission"), "\(result.errorOutput)")
        #expect(!isMounted(inputs.scratch.mountPoint))
        #expect(serverProcesses(of: inputs.scratch.mountPoint).isEmpty, "no server is left waiting on the FIFO")
    }

    /// A folder mount serves its store files; a FIFO with a store's name beside them is not one
    /// (opening it would block the lookup, and every lookup after it).
    @Test func aFolderMountPassesOverAFIFOWithAStoresName() throws {
        let inputs = try Inputs()
        defer { inputs.scratch.remove() }
        let folder = inputs.scratch.path + "/stores"
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: inputs.store, toPath: folder + "/Library.sqlite")
        #expect(mkfifo(folder + "/Pipe.sqlite", 0o600) == 0)
        let mounted = try Self.storefs(["mount", folder, inputs.scratch.mountPoint])
        #expect(mounted.succeeded, "\(mounted.errorOutput)")
        defer { _ = try? Self.storefs(["unmount", inputs.scratch.mountPoint]) }
        let listing = try runTool("ls", [inputs.scratch.mountPoint], timeout: Self.refusalTimeout)
        #expect(listing.output == "Library.sqlite\n", "ls lists the store, not the FIFO: \(listing.output)")
        let named = try runTool("stat", [inputs.scratch.mountPoint + "/Pipe.sqlite"], timeout: Self.refusalTimeout)
        #expect(named.status != 0 && named.error.contains("No such file"), "\(named.error)")
        let employees = try runTool("ls", [inputs.scratch.mountPoint + "/Library.sqlite/Employee"], timeout: 60)
        #expect(employees.status == 0 && !employees.output.isEmpty, "the store beside it serves: \(employees.error)")
        #expect(try Self.storefs(["unmount", inputs.scratch.mountPoint]).succeeded)
    }

    // MARK: - A failed write of the output

    /// Every command that prints reports a write that failed (`> /dev/full`), as export and diff
    /// did: exit status not 0, the reason on standard error.
    @Test(arguments: [
        ["info", "STORE"], ["info", "--json", "STORE"], ["info", "--hashes", "STORE"], ["model", "STORE"],
        ["model", "--hashes", "STORE"], ["model", "--diff", "STORE", "sample"], ["history", "NOTES"],
        ["history", "--json", "NOTES"], ["export", "STORE"], ["diff", "STORE", "OTHER"], ["--help"],
        ["mount", "--help"],
        ["--version"], ["--generate-completion-script", "bash"]
    ])
    func aFailedWriteOfTheOutputIsAnError(arguments: [String]) throws {
        let inputs = try Inputs()
        defer { inputs.scratch.remove() }
        let notes = try ExportCommandTests.corpusCopy(
            "RhetTbull_apple-notes-parser_NoteStore-macOS-14-Sonoma.sqlite", into: inputs.scratch)
        let other = inputs.scratch.path + "/Other.sqlite"
        #expect(try Self.storefs(["sample", "--objects", "200", other]).succeeded)
        let command = inputs.resolve(arguments).map { $0 == "NOTES" ? notes : $0 == "OTHER" ? other : $0 }
        let line = "exec \(quoted(try storefsBinary())) \(command.map(quoted).joined(separator: " ")) > /dev/full"
        let result = try shell(line)
        #expect(result.status != 0, "\(line): exit status 0 although nothing was written")
        #expect(
            result.errorOutput.contains("cannot write the output"),
            "\(line) says why: \(result.errorOutput.prefix(400))")
        #expect(!result.errorOutput.contains("NSCocoaErrorDomain"), "\(result.errorOutput.prefix(400))")
    }

    // MARK: - PostgreSQL URLs

    /// Every command that takes a store takes a PostgreSQL URL, and none shows its password:
    /// not in output, errors, the log, /proc/mounts, the root's extended attributes or the
    /// background server's command line (`ps`).
    @Test func everyCommandTakesAPostgreSQLURLAndNeverShowsItsPassword() throws {
        let server = try PostgresServer.shared()
        let scratch = try Scratch()
        defer { scratch.remove() }
        let secret = "s3cret-Pw"
        func url(_ schema: String) -> String {
            "postgresql://postgres:\(secret)@/postgres?host=\(server.folder.path)&port=5432&schema=\(schema)"
                + "&password=\(secret)2"
        }
        let store = url(PostgresServer.uniqueSchema("urls"))
        let copy = scratch.path + "/Copy.sqlite"
        var seen: [String] = []
        func storefs(_ arguments: [String], succeeds: Bool = true) throws -> ToolResult {
            let result = try Self.storefs(arguments, timeout: 300)
            let shown = arguments.map { $0.replacingOccurrences(of: secret, with: "…") }.joined(separator: " ")
            seen.append(result.output + result.errorOutput)
            #expect(
                !(result.output + result.errorOutput).contains(secret),
                "storefs \(shown) shows the password: \(result.output.prefix(300)) \(result.errorOutput.prefix(300))")
            if succeeds {
                #expect(result.succeeded, "storefs \(shown): \(result.errorOutput.prefix(600))")
            }
            return result
        }
        _ = try storefs(["sample", "--objects", "100", store])
        #expect(try storefs(["info", store]).output.contains("type:     PostgreSQL"))
        let info = try storefs(["info", "--json", store]).output
        #expect(info.contains("\"objects\" : 100"), "\(info.prefix(300))")
        #expect(try storefs(["export", store]).output.split(separator: "\n").count == 100)
        let where_ = try storefs(["export", store, "--entity", "Employee", "--where", "level > 8"]).output
        #expect(!where_.isEmpty)
        _ = try storefs(["migrate", store, copy])
        #expect(try storefs(["diff", store, copy]).status == 0, "a copy holds the same objects")
        #expect(try storefs(["diff", copy, store]).status == 0)
        #expect(try storefs(["model", store]).output.contains("<entity name=\"Employee\""))
        #expect(try storefs(["model", "--hashes", store]).output.contains("Employee"))
        #expect(try storefs(["model", "--diff", store, copy]).output.contains("unchanged"))
        #expect(try storefs(["info", "--model", store, copy]).output.contains("the model of store postgresql://"))
        let history = try storefs(["history", store], succeeds: false)
        #expect(history.errorOutput.contains("keeps no persistent history"), "\(history.errorOutput)")
        _ = try storefs(["migrate", copy, url(PostgresServer.uniqueSchema("urls_copy"))])
        // An edit made in an evidence mount of the copy, replayed on the store on the server.
        let mountPoint = scratch.mountPoint
        _ = try storefs(["mount", "-o", "evidence", copy, mountPoint])
        #expect(try shell("echo Hopper > \(quoted(mountPoint + "/Employee/p6/lastName"))").succeeded)
        let patch = try storefs(["overlay", "export", mountPoint]).output
        _ = try storefs(["unmount", mountPoint])
        try patch.write(toFile: scratch.path + "/patch.json", atomically: true, encoding: .utf8)
        _ = try storefs(["apply", scratch.path + "/patch.json", store])
        #expect(try storefs(["diff", copy, store], succeeds: false).status == 1, "the store took the edit")

        // A mount: the log (with debug detail), /proc/mounts, the metadata and ps.
        let log = scratch.path + "/mount.log"
        _ = try storefs(["mount", store, mountPoint, "--log-file", log, "-v"])
        defer { _ = try? Self.storefs(["unmount", mountPoint]) }
        #expect(try String(contentsOfFile: "/proc/mounts", encoding: .utf8).contains("postgresql://postgres:***@"))
        #expect(!(try String(contentsOfFile: "/proc/mounts", encoding: .utf8)).contains(secret))
        let servers = serverProcesses(of: mountPoint)
        #expect(!servers.isEmpty)
        for pid in servers {
            let line = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") ?? Data()
            #expect(!String(decoding: line, as: UTF8.self).contains(secret), "ps shows the server's password")
        }
        let attributes = try run("getfattr", ["-d", mountPoint])
        #expect(attributes.succeeded && !attributes.output.contains(secret))
        #expect(try run("cat", [mountPoint + "/Employee/p6/lastName"]).output == "Hopper\n")
        _ = try storefs(["unmount", mountPoint])
        let logged = try String(contentsOfFile: log, encoding: .utf8)
        #expect(logged.contains("postgresql://postgres:***@"), "the log names the store: \(logged.prefix(500))")
        #expect(!logged.contains(secret), "the log shows the password")

        // URLs that go nowhere: the error names them, without the password.
        let broken = try storefs(
            ["info", "postgresql://postgres:\(secret)@/postgres?host=/nonexistent&x=a b"], succeeds: false)
        #expect(
            broken.status != 0 && broken.errorOutput.contains("postgresql://postgres:***@"), "\(broken.errorOutput)")
        let refused = try storefs(
            ["export", "postgres://u:\(secret)@127.0.0.1:1/db?connect_timeout=2"], succeeds: false)
        #expect(refused.status != 0 && refused.errorOutput.contains("postgres://u:***@127.0.0.1:1"))
        #expect(seen.count > 20)
    }
}
