import Foundation
import FuseKit
import ObjectGraph
import Synchronization

/// The days of `.timeline` and what has an event on each (``TimelineNode``), made from the
/// store's ``Timeline``.
///
/// Threading: immutable; safe from any thread.
final class TimelineIndex: Sendable {
    /// Sorted.
    let days: [TimelineNode.Day]
    /// By day number: what has an event that day, sorted, each once.
    private let targets: [Int64: [TimelineNode.Target]]
    let years: [Int]

    init(_ timeline: Timeline) {
        var targets: [Int64: Set<TimelineNode.Target>] = [:]
        var days: [Int64: TimelineNode.Day] = [:]
        for event in timeline.events {
            guard let day = TimelineNode.Day(time: event.time) else { continue }
            let target: TimelineNode.Target
            switch event.source {
            case .live:
                let id = ObjectID(entity: event.entity, key: PrimaryKey(event.number))
                guard Node.fits(id) else { continue }
                target = .object(id)
            case .recovered:
                guard Node.fits(PrimaryKey(event.number + 1)) else { continue }
                target = .recovered(Int(event.number))
            case .history:
                guard Node.fits(PrimaryKey(event.number)) else { continue }
                target = .transaction(event.number)
            }
            targets[day.number, default: []].insert(target)
            days[day.number] = day
        }
        self.days = days.values.sorted()
        self.targets = targets.mapValues { $0.sorted() }
        years = Array(Set(self.days.map(\.year))).sorted()
    }

    /// The days whose numbers are in `low...high`.
    func days(from low: Int, through high: Int) -> ArraySlice<TimelineNode.Day> {
        let start = days.partitioningIndex { $0.number >= Int64(low) }
        let end = days.partitioningIndex { $0.number > Int64(high) }
        return start < end ? days[start..<end] : days[start..<start]
    }

    func targets(onDay day: Int64) -> [TimelineNode.Target] { targets[day] ?? [] }
}

extension Array {
    /// The first index whose element satisfies `belongs` (which must be false, then true, along
    /// the array).
    fileprivate func partitioningIndex(where belongs: (Element) -> Bool) -> Int {
        var low = 0
        var high = count
        while low < high {
            let middle = (low + high) / 2
            if belongs(self[middle]) { high = middle } else { low = middle + 1 }
        }
        return low
    }
}

/// The timeline index a mount made last, and the values' generation it was made in.
final class TimelineCache: Sendable {
    private let kept = Mutex<(generation: Int, index: TimelineIndex)?>(nil)

    func index(generation: Int, _ make: () throws(FileSystemError) -> TimelineIndex) throws(FileSystemError)
        -> TimelineIndex
    {
        if let kept = kept.withLock({ $0 }), kept.generation == generation { return kept.index }
        let index = try make()
        kept.withLock { $0 = (generation, index) }
        return index
    }
}

extension Mapping {
    /// The timeline's days and links: made when `.timeline` is first read, and again once values
    /// changed (through the mount, or by another process).
    func timelineIndex() throws(FileSystemError) -> TimelineIndex {
        let generation = renderedValues.generation
        return try timeline.index(generation: generation) { () throws(FileSystemError) -> TimelineIndex in
            let recovered = showsRecovered ? try? recoveredRecords() : nil
            let coordinator = coordinator
            let timeline = try engine(
                { () throws(ObjectGraphError) in try Timeline.read(coordinator, recovered: recovered) },
                "read \(TimelineNode.folderName)")
            return TimelineIndex(timeline)
        }
    }

    /// The name of a day folder's link to `target`.
    func timelineName(of target: TimelineNode.Target) -> String {
        switch target {
        case .object(let id): return HistoryNode.name(of: id, model)
        case .recovered(let index):
            guard let records = try? recoveredRecords(), index < records.records.count else {
                return "recovered-\(index)"
            }
            let record = records.records[index]
            return TimelineNode.recoveredPrefix + model[record.entity].name + "-" + record.name
        case .transaction(let number): return HistoryNode.name(of: number)
        }
    }

    /// What a day folder's link `name` points at, if it names anything.
    func timelineTarget(named name: String) -> TimelineNode.Target? {
        if let number = HistoryNode.number(named: name) { return .transaction(number) }
        if name.hasPrefix(TimelineNode.recoveredPrefix) {
            let rest = name.dropFirst(TimelineNode.recoveredPrefix.count)
            guard let dash = rest.firstIndex(of: "-"), let entity = model.entityID(named: String(rest[..<dash])),
                let records = try? recoveredRecords(),
                let index = records.index(of: entity, named: String(rest[rest.index(after: dash)...]))
            else { return nil }
            return .recovered(index)
        }
        return HistoryNode.object(named: name, model).map { .object($0) }
    }
}
