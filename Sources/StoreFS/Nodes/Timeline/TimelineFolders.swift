import Foundation
import FuseKit
import ObjectGraph

/// What every node of `.timeline` shares: read-only (``ReadOnlyKind``); its listings are
/// computed from the store, so the kernel keeps none.
protocol TimelineKind: ReadOnlyKind {}

extension TimelineKind {
    static var refusal: String { "the timeline is computed and read-only" }
    var keepsListings: Bool { false }
}

/// `MNT/.timeline`: a folder per year that has an event (``Timeline``). Reachable by name, not
/// listed at the root.
struct TimelineFolder: TimelineKind {
    var isDirectory: Bool { true }

    func parent(of node: Node, in mapping: Mapping) -> Node { .root }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] { [TimelineNode.folderName] }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .directory, permissions: 0o555)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        guard let year = TimelineNode.number(named: name, digits: 4, in: 1...9999),
            try mapping.timelineIndex().years.contains(year)
        else { throw .notFound }
        return .timeline(.year, key: Int64(year))
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        .names(
            try mapping.timelineIndex().years.map {
                (TimelineNode.folderName($0, digits: 4), Node.timeline(.year, key: Int64($0)))
            })
    }
}

/// `.timeline/YYYY`, `.timeline/YYYY/MM` and `.timeline/YYYY/MM/DD`: the months of a year, the
/// days of a month, and a day's links to what has an event that day (``TimelineLink``). A
/// folder's time is its first day's midnight (UTC).
struct TimelineDateFolder: TimelineKind {
    var isDirectory: Bool { true }

    private func part(_ node: Node) -> TimelineNode.Part { TimelineNode.Part(rawValue: node.property) ?? .year }

    func parent(of node: Node, in mapping: Mapping) -> Node {
        let key = node.key.rawValue
        switch part(node) {
        case .month: return .timeline(.year, key: key / 100)
        case .day: return .timeline(.month, key: key / 100)
        default: return TimelineNode.folder
        }
    }

    func pathComponents(of node: Node, in mapping: Mapping) -> [String] {
        let key = Int(node.key.rawValue)
        switch part(node) {
        case .year: return [TimelineNode.folderName, TimelineNode.folderName(key, digits: 4)]
        case .month:
            return [
                TimelineNode.folderName, TimelineNode.folderName(key / 100, digits: 4),
                TimelineNode.folderName(key % 100, digits: 2)
            ]
        default:
            return [
                TimelineNode.folderName, TimelineNode.folderName(key / 10000, digits: 4),
                TimelineNode.folderName(key / 100 % 100, digits: 2), TimelineNode.folderName(key % 100, digits: 2)
            ]
        }
    }

    /// The days of the index under this folder.
    private func days(_ node: Node, _ index: TimelineIndex) -> ArraySlice<TimelineNode.Day> {
        let key = Int(node.key.rawValue)
        switch part(node) {
        case .year: return index.days(from: key * 10000, through: key * 10000 + 9999)
        case .month: return index.days(from: key * 100, through: key * 100 + 99)
        default: return index.days(from: key, through: key)
        }
    }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        guard let first = days(node, try mapping.timelineIndex()).first else { throw .notFound }
        return mapping.make(node, .directory, permissions: 0o555, time: first.date)
    }

    func child(named name: String, of node: Node, in mapping: Mapping) throws(FileSystemError) -> Node {
        let index = try mapping.timelineIndex()
        let key = node.key.rawValue
        let found: Node?
        switch part(node) {
        case .year:
            found = TimelineNode.number(named: name, digits: 2, in: 1...12).map {
                .timeline(.month, key: key * 100 + Int64($0))
            }
        case .month:
            found = TimelineNode.number(named: name, digits: 2, in: 1...31).map {
                .timeline(.day, key: key * 100 + Int64($0))
            }
        default:
            guard let target = mapping.timelineTarget(named: name), index.targets(onDay: key).contains(target) else {
                throw .notFound
            }
            found = target.node
        }
        guard let found else { throw .notFound }
        if found.kind != .timelineLink, days(found, index).isEmpty { throw .notFound }
        return found
    }

    func listing(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError)
        -> DirectoryHandles.Listing
    {
        let index = try mapping.timelineIndex()
        let days = days(node, index)
        switch part(node) {
        case .year:
            let months = Array(Set(days.map(\.month))).sorted()
            return .names(
                months.map {
                    (
                        TimelineNode.folderName($0, digits: 2),
                        Node.timeline(.month, key: node.key.rawValue * 100 + Int64($0))
                    )
                })
        case .month:
            return .names(
                days.map { (TimelineNode.folderName($0.day, digits: 2), Node.timeline(.day, key: $0.number)) })
        default:
            return .names(index.targets(onDay: node.key.rawValue).map { (mapping.timelineName(of: $0), $0.node) })
        }
    }
}

/// A link in a day's folder to what has an event that day: a live object's folder
/// (`Note-p12 -> ../../../../Note/p12`), a recovered record's (`recovered-Note-p7-1a2b3c4d ->
/// ../../../../.recovered/Note/p7-1a2b3c4d`), a history transaction's (`t5 -> ../../../../.history/t5`).
struct TimelineLink: TimelineKind {
    var isDirectory: Bool { false }

    func parent(of node: Node, in mapping: Mapping) -> Node { TimelineNode.folder }

    func attributes(of node: Node, in mapping: Mapping, known: Snapshot?, listed: Bool) throws(FileSystemError)
        -> FileAttributes
    {
        mapping.make(node, .symbolicLink, size: try linkTarget(of: node, in: mapping, known: known).utf8.count)
    }

    func linkTarget(of node: Node, in mapping: Mapping, known: Snapshot?) throws(FileSystemError) -> String {
        guard let target = TimelineNode.Target(node) else { throw .notFound }
        switch target {
        case .object(let id):
            guard mapping.isValid(id.entity) else { throw .notFound }
            return "../../../../\(mapping.model[id.entity].name)/\(id.key)"
        case .recovered(let index):
            let records = try mapping.recoveredRecords()
            guard index >= 0, index < records.records.count else { throw .notFound }
            let record = records.records[index]
            return "../../../../\(RecoveredNode.folderName)/\(mapping.model[record.entity].name)/\(record.name)"
        case .transaction(let number):
            return "../../../../\(HistoryNode.folderName)/\(HistoryNode.name(of: number))"
        }
    }
}
