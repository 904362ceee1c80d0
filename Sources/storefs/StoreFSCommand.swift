import ArgumentParser
import Foundation

@main
struct StoreFSCommand: ParsableCommand {
    /// The release, printed by `storefs --version` and put in the Debian package's version.
    static let version = "0.1.0"

    static let configuration = CommandConfiguration(
        commandName: "storefs",
        abstract: "Mount Core Data object-graph stores as directories.",
        discussion: """
            Entities are directories, objects are folders, attributes are files, relationships are \
            symlinks, metadata are extended attributes. Store types follow the file suffix (.sqlite and SwiftData's \
            .store, .xml, .binary) or, for other names, the file's content.
            """,
        version: "storefs \(version)",
        subcommands: [
            Demo.self, Mount.self, Unmount.self, Recover.self, Migrate.self, Info.self, History.self, Model.self,
            Sample.self,
            Create.self, Overlay.self, Apply.self, Export.self, Diff.self,
            Doctor.self, Stats.self, TimelineCommand.self,
            Find.self
        ])

    /// ArgumentParser's main, except that a ValidationError thrown by a subcommand's run() shows
    /// that subcommand's usage. ArgumentParser knows which subcommand was parsed only while
    /// parsing; for errors thrown later it prints the root's usage (`storefs <subcommand>`),
    /// which tells a user nothing about the command they typed.
    static func main() {
        CommandLinePasswords.hide()
        var command: any ParsableCommand
        do {
            command = try parseAsRoot()
        } catch {
            exitReporting(error)
        }
        do {
            try command.run()
            StandardOutput.finishPrinted()
        } catch let error as ValidationError {
            let subcommand = type(of: command)
            let usage = usageString(for: subcommand).trimmingCharacters(in: .whitespacesAndNewlines)
            // The usage starts with the command's full name, `storefs mount`.
            let name = usage.split(separator: " ").prefix(while: {
                !$0.hasPrefix("<") && !$0.hasPrefix("[") && !$0.hasPrefix("-")
            })
            .joined(separator: " ")
            printError("Error: \(error.message)\nUsage: \(usage)\n  See '\(name) --help' for more information.")
            Foundation.exit(ExitCode.validationFailure.rawValue)
        } catch {
            exitReporting(error)
        }
    }

    /// ArgumentParser's exit(withError:), except that what a successful end prints (`--help`,
    /// `--version`, completion scripts) is checked to have been written (``StandardOutput.finishPrinted()``).
    static func exitReporting(_ error: any Error) -> Never {
        guard exitCode(for: error) == .success else { exit(withError: error) }
        let message = fullMessage(for: error)
        if !message.isEmpty { print(message) }
        StandardOutput.finishPrinted()
        Foundation.exit(ExitCode.success.rawValue)
    }
}
