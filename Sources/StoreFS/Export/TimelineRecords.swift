import Foundation
import ObjectGraph

/// The formats of `storefs timeline`.
public enum TimelineFormat: String, Sendable, CaseIterable {
    /// JSON Lines with Timesketch's fields.
    case jsonLines = "jsonl"
    /// RFC 4180 CSV with a header row, the same fields.
    case csv
    /// The Sleuth Kit's body file (`mactime -b`).
    case bodyfile
}

/// Writes a ``Timeline``'s events.
///
/// JSON Lines and CSV carry Timesketch's fields: `datetime` (ISO 8601 in UTC with microseconds),
/// `timestamp` (microseconds since 1970), `timestamp_desc` (`Entity.attribute`), `message`, then
/// `entity`, `object` (`p12`, a recovered record's name, `t5`), `attribute` and `source` (`live`,
/// `history`, `recovered`).
///
/// A body file has one line per event in The Sleuth Kit's 3.x format,
/// `MD5|name|inode|mode_as_string|UID|GID|size|atime|mtime|ctime|crtime`: MD5 0, the name
/// `/SOURCE/Entity/object/attribute`, inode 0, mode `r/r---------`, owner 0, size 0, and the
/// event's time (whole seconds since 1970, rounded down) in all four times, so that `mactime`
/// shows it once, as `macb`.
///
/// Threading: a value; use one writer per output.
public struct TimelineRecords: Sendable {
    public let format: TimelineFormat

    public init(format: TimelineFormat) { self.format = format }

    public func begin(into out: inout [UInt8]) {
        if format == .csv {
            out += Array("datetime,timestamp,timestamp_desc,message,entity,object,attribute,source\n".utf8)
        }
    }

    public func append(_ event: Timeline.Event, of timeline: Timeline, into out: inout [UInt8]) {
        let entity = timeline.entityName(of: event)
        let object = timeline.objectName(of: event)
        let attribute = timeline.attributeName(of: event)
        let unix = event.time + 978_307_200
        switch format {
        case .bodyfile:
            let seconds = String(Int64((unix).rounded(.down)))
            let name = "/\(event.source.name)/\(entity)/\(object)/\(attribute)".replacingOccurrences(of: "|", with: "_")
            out += Array("0|\(name)|0|r/r---------|0|0|0|\(seconds)|\(seconds)|\(seconds)|\(seconds)\n".utf8)
        case .jsonLines, .csv:
            let fields = [
                Self.datetime(event.date), String(Int64((unix * 1_000_000).rounded(.down))),
                timeline.description(of: event), timeline.message(of: event), entity, object, attribute,
                event.source.name
            ]
            if format == .csv {
                for (i, field) in fields.enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    ObjectRecords.appendCSVField(field.utf8, to: &out)
                }
                out.append(UInt8(ascii: "\n"))
            } else {
                let names = [
                    "datetime", "timestamp", "timestamp_desc", "message", "entity", "object", "attribute", "source"
                ]
                out.append(UInt8(ascii: "{"))
                for (i, (name, field)) in zip(names, fields).enumerated() {
                    if i > 0 { out.append(UInt8(ascii: ",")) }
                    ObjectRecords.appendJSONString(name.utf8, to: &out)
                    out.append(UInt8(ascii: ":"))
                    if name == "timestamp" {
                        out += Array(field.utf8)
                    } else {
                        ObjectRecords.appendJSONString(field.utf8, to: &out)
                    }
                }
                out += Array("}\n".utf8)
            }
        }
    }

    /// `2024-05-17T10:11:12.345678+00:00`: ISO 8601 in UTC with microseconds, as Timesketch reads it.
    static func datetime(_ date: Date) -> String {
        let unix = date.timeIntervalSince1970
        let seconds = unix.rounded(.down)
        var micros = Int(((unix - seconds) * 1_000_000).rounded())
        var whole = seconds
        if micros >= 1_000_000 {
            micros -= 1_000_000
            whole += 1
        }
        let formatter = ISO8601DateFormatter()
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.formatOptions = [.withFullDate, .withTime, .withDashSeparatorInDate, .withColonSeparatorInTime]
        let base = formatter.string(from: Date(timeIntervalSince1970: whole))
        let fraction = String(micros)
        return base + "." + String(repeating: "0", count: 6 - fraction.count) + fraction + "+00:00"
    }
}
