import Foundation
import GRDB
import ObjectGraph

/// `value IN {constants}` in SQL: the constants as one SQL `IN (…)` list per way of comparing,
/// which SQLite looks values up in as a set (an ephemeral index), rather than a tree of ORs that
/// grows with the list (6,000 values passed SQLite's 1,000 levels of expression depth: issue 34).
extension PredicateTranslator {
    /// Bound values one statement may hold: below SQLite's 32,766 (SQLITE_MAX_VARIABLE_NUMBER);
    /// a predicate that needs more is declined and evaluated in memory, where lists are sets too.
    static let maximumBoundValues = 30_000

    /// Lists shorter than this are written as ORs of equalities, as every comparison is.
    static let smallestSet = 16

    /// `value IN {items}`, exactly as ``PredicateEvaluator`` decides it: each item that compares
    /// by plain equality of one SQL expression (an integer, double or decimal column with a
    /// number, a string column with a string and no `[c]`/`[d]`) joins the `IN (…)` list of that
    /// expression; any other item is its own equality, ORed with the lists. Never NULL.
    func membership(_ value: Scalar, _ items: [Constant], _ options: ComparisonOptions) -> String? {
        var lists: [String: [DatabaseValue]] = [:]
        var order: [String] = []
        var parts: [String] = []
        for item in items {
            if items.count >= Self.smallestSet, case .attribute(let sql, let type) = value, let kind = kind(of: type),
                let (left, bound) = listMember(sql, kind, item, options)
            {
                if lists[left] == nil { order.append(left) }
                lists[left, default: []].append(bound)
                continue
            }
            guard let part = equal(value, item, options) else { return nil }
            if part != "0" { parts.append(part) }
        }
        if case .attribute(let sql, _) = value {
            for left in order {
                let names = (lists[left] ?? []).map(bind).joined(separator: ", ")
                // The guard keeps it 0 or 1: `NULL IN (…)` is NULL.
                parts.append("(\(sql) IS NOT NULL AND \(left) IN (\(names)))")
            }
        }
        guard !parts.isEmpty else { return "0" }
        return parts.count == 1 ? parts[0] : Self.balanced(parts, "OR")
    }

    /// The SQL expression an item is compared with and the value bound for it, when `column =
    /// item` is what ``equal(_:_:_:)`` writes for it (the same expressions and values); nil
    /// otherwise.
    private func listMember(_ sql: String, _ kind: Kind, _ item: Constant, _ options: ComparisonOptions)
        -> (String, DatabaseValue)?
    {
        switch kind {
        case .string:
            guard options.isEmpty, case .string(let text) = item else { return nil }
            return ("CAST(\(sql) AS BLOB)", Data(text.utf8).databaseValue)
        case .integer, .double, .decimal:
            var number = item
            if case .string(let text) = item {
                // Read as a number, as the evaluator (and SQLite's affinity) reads it; a string
                // that is no number equals nothing (equal(_:_:_:) writes 0 for it).
                let trimmed = text.trimmingCharacters(in: .whitespaces)
                if let i = Int64(trimmed) {
                    number = .integer(i)
                } else if let d = Double(trimmed), d.isFinite {
                    number = .double(d)
                } else {
                    return nil
                }
            }
            switch (kind, number) {
            case (.integer, .integer(let i)): return (sql, i.databaseValue)
            case (.integer, .double(let d)): return ("CAST(\(sql) AS REAL)", d.databaseValue)
            case (.double, .integer(let i)): return (sql, Double(i).databaseValue)
            case (.double, .double(let d)): return (sql, d.databaseValue)
            case (.decimal, .integer(let i)) where i.magnitude <= 1 << 53: return (sql, i.databaseValue)
            default: return nil
            }
        case .uuid, .data:
            return nil
        }
    }
}
