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
        (["mount", "/nonexistent/A.sqlite", "/nonexistent/mnt"], "storefs mount", "mount point /nonexistent/mnt does not exist"),
        (["migrate", "/nonexistent/A.sqlite", "/nonexistent/B.xml"], "storefs migrate", "/nonexistent/A.sqlite does not exist"),
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
}
