import ArgumentParser
import Foundation
import ObjectGraph
import StoreFS

struct Diff: ParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Print the objects two stores of one model differ in, and how.",
        discussion: """
            Objects are matched by entity and key (Employee/p12), as a copy or migration of a store \
            keeps them. Each line names an object only in OLD (-), only in NEW (+), or in both with \
            changes (~), followed by the attributes and relationships that differ. The stores may be \
            of any types (SQLite, XML, binary, PostgreSQL); both are only read, a page of objects at a time. \
            Exit status as diff(1): 0 when the stores hold the same objects, 1 when they differ, \
            2 when they could not be compared.
            """)

    @Argument(help: "The first store: a file or a postgresql:// URL.")
    var old: String

    @Argument(help: "The second store: a file or a postgresql:// URL.")
    var new: String

    @Flag(name: .long, help: "Print JSON Lines: one object per difference.")
    var json = false

    @Option(
        name: .long,
        help: "The model to read both stores with (Xcode model, compiled model or store); by default each store's own.")
    var model: String?

    @Flag(
        name: .long,
        help:
            "Open both stores in evidence mode: nothing beside them touched; the files read are printed with their SHA-256 to standard error."
    )
    var evidence = false

    @OptionGroup var log: LogOptions

    /// Objects read per store request on each side.
    static let pageSize = 1000

    func run() throws {
        let logger = log.bootstrap()
        let differences: Int
        // False when an evidence open finds its store's folder changed while it was read.
        var untouched = true
        do {
            let openedA = try StoreOpening.open(old, model: model, type: nil, evidence: evidence, logger: logger)
            defer { if !openedA.close() { untouched = false } }
            let openedB = try StoreOpening.open(new, model: model, type: nil, evidence: evidence, logger: logger)
            defer { if !openedB.close() { untouched = false } }
            let (a, b) = (openedA.coordinator, openedB.coordinator)
            let shared = Set(a.model.entities.map(\.name)).intersection(b.model.entities.map(\.name))
            guard !shared.isEmpty else {
                throw ValidationError(
                    "\(StoreURL.redacting(old)) and \(StoreURL.redacting(new)) have no entity in common: they are not stores of one model"
                )
            }
            var output = StandardOutput()
            differences = try StoreComparison(old: a, new: b, pageSize: Self.pageSize).compare { difference in
                if json {
                    DifferenceRecords.appendJSON(difference, to: &output.buffer)
                } else {
                    DifferenceRecords.appendText(difference, to: &output.buffer)
                }
                try output.flushIfFull()
            }
            try output.flush()
        } catch {
            // diff(1)'s convention: 2 is trouble, so 1 means only "they differ".
            let message = (error as? ValidationError)?.message ?? (error as? ObjectGraphError)?.message ?? "\(error)"
            printError("storefs diff: \(message)")
            throw ExitCode(2)
        }
        // Trouble (2) before "they differ" (1): the comparison read a store that was changing.
        if !untouched { throw ExitCode(2) }
        if differences > 0 { throw ExitCode(1) }
    }
}
