import ArgumentParser

@main
struct StoreFSCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "storefs",
        abstract: "Mount Core Data object-graph stores as directories.",
        discussion: """
            Entities are directories, objects are folders, attributes are files, relationships are \
            symlinks, metadata are extended attributes. Store types follow the file suffix (.sqlite and SwiftData's \
            .store, .xml, .binary) or, for other names, the file's content.
            """,
        subcommands: [Demo.self, Mount.self, Unmount.self, Recover.self, Migrate.self, Info.self, Model.self, Sample.self, Create.self])
}
