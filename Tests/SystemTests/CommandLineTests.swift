import Foundation
import Testing

/// The command line's own surface: --version, the usage shown after an error, and the
/// completion scripts the install script and the package install.
@Suite struct CommandLineTests {
    @Test func versionPrintsTheNameAndARelease() throws {
        let result = try run(try storefsBinary(), ["--version"])
        #expect(result.succeeded)
        #expect(
            result.output.range(of: #"^storefs \d+\.\d+\.\d+\n$"#, options: .regularExpression) != nil,
            "storefs --version printed \(result.output)")
    }

    /// Errors found in run() (a missing store, a bad count) name the subcommand in the usage that
    /// follows them, as errors found while parsing do.
    @Test(arguments: [
        (["info", "/nonexistent/Missing.sqlite"], "storefs info", "/nonexistent/Missing.sqlite does not exist"),
        (["sample", "--objects", "0", "/nonexistent/New.sqlite"], "storefs sample", "--objects must be positive"),
        (
            ["mount", "/nonexistent/A.sqlite", "/nonexistent/mnt"], "storefs mount",
            "mount point /nonexistent/mnt does not exist"
        ),
        (
            ["migrate", "/nonexistent/A.sqlite", "/nonexistent/B.xml"], "storefs migrate",
            "/nonexistent/A.sqlite does not exist"
        )
    ])
    func anErrorsUsageNamesTheSubcommand(arguments: [String], command: String, message: String) throws {
        let result = try run(try storefsBinary(), arguments)
        #expect(result.status == 64, "EX_USAGE; stderr: \(result.errorOutput)")
        #expect(result.errorOutput.hasPrefix("Error: \(message)"), "stderr: \(result.errorOutput)")
        #expect(result.errorOutput.contains("Usage: \(command) "), "stderr: \(result.errorOutput)")
        #expect(result.errorOutput.contains("See '\(command) --help'"), "stderr: \(result.errorOutput)")
        #expect(!result.errorOutput.contains("<subcommand>"), "stderr: \(result.errorOutput)")
    }

    @Test(arguments: ["bash", "zsh", "fish"])
    func completionScriptsKnowEverySubcommand(shell: String) throws {
        let result = try run(try storefsBinary(), ["--generate-completion-script", shell])
        #expect(result.succeeded, "\(result.errorOutput)")
        for subcommand in ["mount", "migrate", "info", "sample", "create", "demo"] {
            #expect(result.output.contains(subcommand), "the \(shell) completion lacks \(subcommand)")
        }
    }

    /// The bash completion, loaded by bash itself, offers the subcommands after `storefs `.
    @Test func bashCompletesTheSubcommands() throws {
        let bash = try tool("bash", package: "bash")
        let scratch = try Scratch()
        defer { scratch.remove() }
        let script = try run(try storefsBinary(), ["--generate-completion-script", "bash"])
        try script.output.write(toFile: scratch.path + "/storefs.bash", atomically: true, encoding: .utf8)
        let probe = """
            source \(quoted(scratch.path + "/storefs.bash"))
            COMP_WORDS=(storefs mo); COMP_CWORD=1; COMP_LINE="storefs mo"; COMP_POINT=${#COMP_LINE}
            complete -p storefs >/dev/null || exit 3
            function=$(complete -p storefs | sed -n 's/.*-F \\([^ ]*\\).*/\\1/p')
            "$function" storefs mo storefs
            printf '%s\\n' "${COMPREPLY[@]}"
            """
        let result = try run(bash, ["-c", probe])
        #expect(result.succeeded, "bash: \(result.errorOutput)")
        #expect(result.output.split(separator: "\n").contains("mount"), "completions of `storefs mo`: \(result.output)")
    }

    /// `storefs sample --objects N` writes what its help says: N rounded down to a multiple of
    /// 100, at least 100 (the company comes in units of 100 objects).
    @Test(arguments: [(50, 100), (250, 200), (300, 300)])
    func sampleWritesWhatItsHelpSays(requested: Int, written: Int) throws {
        let binary = try storefsBinary()
        // Help wraps at 80 columns: compare words.
        let help = try run(binary, ["sample", "--help"]).output.split(whereSeparator: \.isWhitespace).joined(
            separator: " ")
        #expect(help.contains("rounded down to a multiple of 100, at least 100"), "sample --help: \(help)")
        let scratch = try Scratch()
        defer { scratch.remove() }
        let sample = try run(binary, ["sample", "--objects", String(requested), scratch.store])
        #expect(sample.succeeded, "\(sample.errorOutput)")
        #expect(sample.output.hasPrefix("wrote \(written) objects"), "storefs sample printed \(sample.output)")
        #expect(sample.errorOutput.contains("units of 100") == (requested != written), "stderr: \(sample.errorOutput)")
        // Counted by another reader than the one that wrote them.
        let info = try run(binary, ["info", "--json", scratch.store])
        let json = try #require(try JSONSerialization.jsonObject(with: Data(info.output.utf8)) as? [String: Any])
        #expect(json["objects"] as? Int == written, "storefs info: \(info.output)")
    }
}
