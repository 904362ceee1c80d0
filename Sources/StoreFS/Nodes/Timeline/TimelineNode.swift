import Foundation
import ObjectGraph

/// The nodes of `.timeline` (``Timeline``: every dated value of the store), one kind per part
/// except the links, which share one. They share code 12 in inode numbers; which part a node is
/// sits in the property field, the numbers it needs in the entity and key bits:
///
/// | part | path | entity | key |
/// |---|---|---|---|
/// | folder | `.timeline` | | |
/// | year | `.timeline/2024` | | 2024 |
/// | month | `.timeline/2024/05` | | 202405 |
/// | day | `.timeline/2024/05/17` | | 20240517 |
/// | object link | `.timeline/2024/05/17/Note-p12` | the object's entity | its key |
/// | recovered link | `.timeline/2024/05/17/recovered-Note-p7-1a2b3c4d` | | the record's index |
/// | transaction link | `.timeline/2024/05/17/t5` | | the transaction's number |
///
/// A link's inode names what it points at, not the day: one object dated on several days has
/// one link inode. Days are UTC days of years 1 to 9999.
enum TimelineNode {
    enum Part: Int {
        case folder = 0, year, month, day, objectLink, recoveredLink, transactionLink

        var kind: Node.Kind {
            switch self {
            case .folder: .timeline
            case .year: .timelineYear
            case .month: .timelineMonth
            case .day: .timelineDay
            case .objectLink, .recoveredLink, .transactionLink: .timelineLink
            }
        }
    }

    static let folderName = ".timeline"
    static let folder = Node.timeline(.folder)
    static let recoveredPrefix = "recovered-"

    /// What a link of a day's folder points at.
    enum Target: Hashable, Comparable {
        case object(ObjectID)
        case recovered(Int)
        case transaction(Int64)

        var node: Node {
            switch self {
            case .object(let id): .timeline(.objectLink, entity: id.entity, key: id.key.rawValue)
            case .recovered(let index): .timeline(.recoveredLink, key: Int64(index))
            case .transaction(let number): .timeline(.transactionLink, key: number)
            }
        }

        init?(_ node: Node) {
            switch TimelineNode.Part(rawValue: node.property) {
            case .objectLink: self = .object(node.object)
            case .recoveredLink: self = .recovered(Int(node.key.rawValue))
            case .transactionLink: self = .transaction(node.key.rawValue)
            default: return nil
            }
        }

        static func < (a: Target, b: Target) -> Bool {
            switch (a, b) {
            case (.object(let x), .object(let y)): x < y
            case (.recovered(let x), .recovered(let y)): x < y
            case (.transaction(let x), .transaction(let y)): x < y
            case (.object, _): true
            case (.recovered, .transaction): true
            default: false
            }
        }
    }

    /// A UTC day as the number `yyyymmdd`, and back.
    struct Day: Hashable, Comparable {
        var year: Int
        var month: Int
        var day: Int

        var number: Int64 { Int64(year * 10000 + month * 100 + day) }

        init(year: Int, month: Int, day: Int) {
            self.year = year
            self.month = month
            self.day = day
        }

        /// The UTC day of a time (seconds since 2001-01-01); nil outside years 1–9999.
        init?(time: Double) {
            let seconds = time + 978_307_200
            guard seconds.isFinite, seconds > -62_135_596_800, seconds < 253_402_300_800 else { return nil }
            (year, month, day) = ISO8601DateText.civil(fromDays: Int((seconds / 86400).rounded(.down)))
            guard year >= 1, year <= 9999 else { return nil }
        }

        /// Midnight UTC of the day.
        var date: Date {
            var components = DateComponents()
            components.year = year
            components.month = month
            components.day = day
            var calendar = Calendar(identifier: .gregorian)
            calendar.timeZone = TimeZone(identifier: "UTC")!
            return calendar.date(from: components) ?? Date(timeIntervalSince1970: 0)
        }

        static func < (a: Day, b: Day) -> Bool { a.number < b.number }
    }

    /// The name of a folder: `2024`, `05`, `17`.
    static func folderName(_ value: Int, digits: Int) -> String {
        let text = String(value)
        return String(repeating: "0", count: max(0, digits - text.count)) + text
    }

    /// The number a folder's name stands for (exactly `digits` digits), within `range`.
    static func number(named name: String, digits: Int, in range: ClosedRange<Int>) -> Int? {
        guard name.utf8.count == digits, name.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }), let value = Int(name),
            range.contains(value)
        else { return nil }
        return value
    }
}
