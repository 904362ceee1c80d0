import Foundation
import ObjectGraph

/// `storefs doctor`'s output: JSON whose keys are the interface (docs/HEALTH.md lists them), and
/// text for people.
struct HealthReportText {
    var store: String
    var storeType: String
    var modelSource: ModelSource
    var hashes: Info.HashCheck
    var report: HealthReport
    var findings: [String]

    // MARK: - JSON

    var json: [String: Any] {
        let examination = report.examination
        let orphans = examination.orphans
        var entities: [String: Any] = [:]
        for (name, count) in report.objects {
            var entity: [String: Any] = ["objects": count]
            if let bytes = examination.entityBytes[name] { entity["bytes"] = bytes }
            entities[name] = entity
        }
        var object: [String: Any] = [
            "store": store, "type": storeType, "healthy": findings.isEmpty, "findings": findings,
            "entities": entities, "objects": report.objects.values.reduce(0, +),
            "orphans": [
                "toOne": orphans.toOneCount, "toMany": orphans.toManyCount,
                "externalData": orphans.externalDataCount, "rows": orphans.rowCount,
                "unowned": orphans.unownedCount,
                "details": [
                    "toOne": orphans.toOne.map(Self.json), "toMany": orphans.toMany.map(Self.json),
                    "unowned": orphans.unowned.map(Self.json),
                    "rows": orphans.rows.map {
                        ["table": $0.table, "zent": $0.zent, "count": $0.count, "examples": $0.examples]
                            as [String: Any]
                    },
                    "externalData": orphans.externalData.map { found -> [String: Any] in
                        [
                            "folder": found.folder.path, "files": found.files, "missing": found.missing,
                            "unreferenced": found.unreferenced.map { ["name": $0.name, "bytes": $0.bytes] },
                            "unreferencedBytes": found.unreferenced.reduce(Int64(0)) { $0 + $1.bytes }
                        ]
                    } ?? NSNull()
                ] as [String: Any]
            ] as [String: Any],
            "violations": [
                "total": report.violations.total,
                "byEntity": Self.violationsByEntity(report.violations)
            ] as [String: Any],
            "model": ["source": modelSource.kind, "description": modelSource.description, "versionHashes": hashes.json]
                as [String: Any],
            "integrity": [
                "checked": examination.integrity.checked, "ok": examination.integrity.isOK,
                "messages": examination.integrity.messages, "method": examination.integrity.method
            ] as [String: Any],
            "keyCounters": examination.keyCounters.map {
                ["entity": $0.entity, "counter": $0.counter, "highestKey": $0.highestKey] as [String: Any]
            }
        ]
        object["space"] = examination.space.map(Self.json) ?? NSNull()
        object["history"] = examination.history.map(Self.json) ?? NSNull()
        return object
    }

    private static func json(_ group: ReferenceGroup) -> [String: Any] {
        [
            "entity": group.entity, "relationship": group.relationship, "count": group.count,
            "examples": group.examples.map { "p\($0)" }, "place": group.place
        ]
    }

    private static func json(_ space: StoreSpace) -> [String: Any] {
        var object: [String: Any] = ["bytes": space.bytes, "tables": space.tables, "measuredWith": space.measuredWith]
        object["walBytes"] = space.walBytes ?? NSNull()
        object["walFrames"] = space.walFrames ?? NSNull()
        object["pageSize"] = space.pageSize ?? NSNull()
        object["pages"] = space.pages ?? NSNull()
        object["freelistPages"] = space.freelistPages ?? NSNull()
        return object
    }

    private static func json(_ history: HistorySummary) -> [String: Any] {
        var object: [String: Any] = [
            "transactions": history.transactions, "changes": history.changes, "strings": history.strings,
            "changesWithoutTransaction": history.changesWithoutTransaction
        ]
        object["oldest"] = history.oldest.map(ISO8601DateText.text(of:)) ?? NSNull()
        object["newest"] = history.newest.map(ISO8601DateText.text(of:)) ?? NSNull()
        object["firstTransaction"] = history.firstTransaction.map { "t\($0)" } ?? NSNull()
        object["lastTransaction"] = history.lastTransaction.map { "t\($0)" } ?? NSNull()
        object["bytes"] = history.bytes ?? NSNull()
        return object
    }

    /// `{"Item": {"title": {"nil": 2, "examples": ["p3"]}}}`.
    private static func violationsByEntity(_ violations: ModelViolations) -> [String: Any] {
        var byEntity: [String: [String: [String: Any]]] = [:]
        for problem in violations.problems {
            var property = byEntity[problem.entity]?[problem.property] ?? [:]
            property[problem.kind] = problem.count
            property["examples"] = ((property["examples"] as? [String]) ?? []) + problem.examples.map { "p\($0)" }
            byEntity[problem.entity, default: [:]][problem.property] = property
        }
        return byEntity
    }

    func json(of result: RepairResult, backup: String?, before: [String]) -> [String: Any] {
        var object: [String: Any] = [
            "findingsBefore": before, "saves": result.saves, "toOneNullified": result.toOnesNullified,
            "toManyRemoved": result.membersRemoved, "joinRowsRemoved": result.unreachable.joinRows,
            "foreignKeysCleared": result.unreachable.foreignKeys, "unownedDeleted": result.unownedDeleted,
            "cascadeDeleted": result.cascadeDeleted, "keyCountersRaised": result.keyCountersRaised,
            "externalDataQuarantined": result.quarantined.count, "vacuumed": result.vacuumed
        ]
        object["backup"] = backup ?? NSNull()
        object["quarantine"] = result.quarantined.isEmpty ? NSNull() : (result.quarantine?.path ?? NSNull())
        if let history = result.history {
            object["historyPruned"] = [
                "transactions": history.transactions, "changes": history.changes, "strings": history.strings
            ]
        } else {
            object["historyPruned"] = NSNull()
        }
        return object
    }

    // MARK: - Text

    var lines: String {
        let examination = report.examination
        var out: [String] = []
        out.append("store:      \(store) (\(storeType))")
        out.append("model:      \(modelSource.description)")
        out.append("hashes:     \(hashes.summary)")
        let integrity = examination.integrity
        out.append(
            "integrity:  "
                + (integrity.checked
                    ? (integrity.isOK ? "ok" : integrity.messages.prefix(5).joined(separator: "; "))
                        + " (\(integrity.method))"
                    : "not checked: \(integrity.method)"))
        if let space = examination.space {
            var text = "\(Self.bytes(space.bytes))"
            if let pages = space.pages, let size = space.pageSize { text += " in \(pages) pages of \(size) bytes" }
            if let free = space.freelistPages, let size = space.pageSize {
                text += "; \(free) free pages (\(Self.bytes(Int64(free * size))))"
            }
            if let frames = space.walFrames { text += "; -wal: \(frames) frames (\(Self.bytes(space.walBytes ?? 0)))" }
            out.append("space:      \(text)")
        }
        out.append("entities:   \(report.objects.values.reduce(0, +)) objects")
        let width = report.objects.keys.map(\.count).max() ?? 0
        for (name, count) in report.objects.sorted(by: { $0.key < $1.key }) {
            let bytes = examination.entityBytes[name].map { "  \(Self.bytes($0))" } ?? ""
            out.append("  \(name.padding(toLength: width, withPad: " ", startingAt: 0))  \(count)\(bytes)")
        }
        if let history = examination.history {
            var text = "\(history.transactions) transactions, \(history.changes) changes, \(history.strings) strings"
            if let first = history.firstTransaction, let last = history.lastTransaction {
                text +=
                    "; t\(first) (\(history.oldest.map(ISO8601DateText.text(of:)) ?? "?")) to t\(last) "
                    + "(\(history.newest.map(ISO8601DateText.text(of:)) ?? "?"))"
            }
            if let bytes = history.bytes { text += "; \(Self.bytes(bytes))" }
            if history.changesWithoutTransaction > 0 {
                text += "; \(history.changesWithoutTransaction) changes without their transaction"
            }
            out.append("history:    \(text)")
        } else {
            out.append("history:    none kept")
        }
        let orphans = examination.orphans
        out.append(
            "orphans:    toOne \(orphans.toOneCount), toMany \(orphans.toManyCount), externalData \(orphans.externalDataCount), "
                + "rows \(orphans.rowCount), unowned \(orphans.unownedCount)")
        for (kind, groups) in [("toOne", orphans.toOne), ("toMany", orphans.toMany), ("unowned", orphans.unowned)] {
            for group in groups {
                let place = group.place.isEmpty ? "" : " (\(group.place))"
                out.append(
                    "  \(kind) \(group.entity).\(group.relationship)\(place): \(group.count)\(Self.examples(group.examples))"
                )
            }
        }
        for rows in orphans.rows {
            out.append("  rows \(rows.table) Z_ENT \(rows.zent): \(rows.count)\(Self.examples(rows.examples))")
        }
        if let external = orphans.externalData, !external.unreferenced.isEmpty || external.missing > 0 {
            let bytes = external.unreferenced.reduce(Int64(0)) { $0 + $1.bytes }
            out.append(
                "  externalData \(external.folder.path): \(external.unreferenced.count) of \(external.files) files unreferenced "
                    + "(\(Self.bytes(bytes))); \(external.missing) references to missing files")
        }
        out.append("violations: \(report.violations.total)")
        for problem in report.violations.problems {
            out.append(
                "  \(problem.entity).\(problem.property): \(problem.count) \(problem.kind)\(Self.examples(problem.examples))"
            )
        }
        for counter in examination.keyCounters {
            out.append("keys:       \(counter.entity): Z_MAX \(counter.counter) is below key \(counter.highestKey)")
        }
        if findings.isEmpty {
            out.append("healthy")
        } else {
            out.append("findings:   \(findings.count)")
            for finding in findings { out.append("  - \(finding)") }
        }
        return out.joined(separator: "\n")
    }

    func lines(of result: RepairResult, backup: String?, before: [String]) -> String {
        var out: [String] = []
        out.append("backup:     \(backup ?? "none (--no-backup)")")
        var done: [String] = []
        func add(_ count: Int, _ what: String) { if count > 0 { done.append("\(count) \(what)") } }
        add(result.keyCountersRaised, "key counters raised")
        add(result.toOnesNullified, "dangling to-ones nullified")
        add(result.membersRemoved, "dangling to-many members removed")
        add(result.unreachable.joinRows, "join rows with neither end removed")
        add(result.unreachable.foreignKeys, "hidden to-many keys cleared")
        add(result.unownedDeleted, "objects whose owner was gone deleted")
        add(result.cascadeDeleted, "objects deleted with them (cascade)")
        if !result.quarantined.isEmpty, let folder = result.quarantine {
            done.append("\(result.quarantined.count) unreferenced external data files moved to \(folder.path)")
        }
        if let history = result.history {
            done.append(
                "persistent history pruned: \(history.transactions) transactions, \(history.changes) changes, \(history.strings) strings"
            )
        }
        if result.vacuumed { done.append("VACUUM") }
        out.append("repaired:   " + (done.isEmpty ? "nothing to do" : done.joined(separator: "; ")))
        out.append("saves:      \(result.saves)")
        out.append("before:     \(before.isEmpty ? "healthy" : "\(before.count) findings")")
        for finding in before { out.append("  - \(finding)") }
        out.append("after:")
        return out.joined(separator: "\n")
    }

    private static func examples(_ keys: [Int64]) -> String {
        keys.isEmpty ? "" : ", e.g. " + keys.map { "p\($0)" }.joined(separator: ", ")
    }

    /// `1.9 MB`, `512 bytes`.
    static func bytes(_ count: Int64) -> String {
        if count < 1024 { return "\(count) bytes" }
        let units = ["KiB", "MiB", "GiB", "TiB"]
        var value = Double(count) / 1024
        var unit = 0
        while value >= 1024 && unit < units.count - 1 {
            value /= 1024
            unit += 1
        }
        return String(format: "%.1f", value) + " " + units[unit]
    }
}
