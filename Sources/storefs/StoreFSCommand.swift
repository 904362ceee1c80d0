import ArgumentParser

@main
struct StoreFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storefs",
        abstract: "Mount Core Data object-graph stores as directories.",
        discussion: """
            Entities are directories, objects are folders, attributes are files, relationships are \
            symlinks, metadata are extended attributes. Store types follow the file suffix: .sqlite, .xml, .binary.
            """,
        subcommands: [Demo.self, Mount.self, Unmount.self, Recover.self, Migrate.self, Info.self, Sample.self, Create.self])
}
