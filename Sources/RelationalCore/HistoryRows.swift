import CoreDataSchema
import Foundation
import ObjectGraph

/// The ACHANGE rows Core Data's persistent history records for one save: one per inserted (0),
/// updated (1, with the bit set of the properties that changed over the entity's slots) and
/// deleted (2, with the values its entity preserves) object, in that order. Each engine numbers
/// them and writes them in the save's own transaction, with the save's ATRANSACTION row.
///
/// Threading: a value; share it freely.
package struct HistoryRow: Sendable {
    package var kind: Int64
    /// The object's concrete Z_ENT and key.
    package var zent: Int64
    package var key: Int64
    /// `ZCOLUMNS` of an update.
    package var columns: Data?
    /// `ZTOMBSTONE0…` of a delete.
    package var tombstone: [SQLValue]

    /// The rows recording `written`.
    package static func rows(of written: WrittenChanges<SQLValue>, slots: HistorySlots, layout: StoreLayout)
        -> [HistoryRow]
    {
        func zent(_ id: ObjectID) -> Int64 { layout[id.entity].zent ?? 0 }
        var rows: [HistoryRow] = []
        rows.reserveCapacity(written.inserted.count + written.updated.count + written.deleted.count)
        for id in written.inserted {
            rows.append(HistoryRow(kind: 0, zent: zent(id), key: id.key.rawValue, columns: nil, tombstone: []))
        }
        for (id, names) in written.updated.sorted(by: { $0.key < $1.key }) {
            rows.append(
                HistoryRow(
                    kind: 1, zent: zent(id), key: id.key.rawValue, columns: slots.columnMask(for: names, of: id.entity),
                    tombstone: []))
        }
        for (id, tombstone) in written.deleted {
            rows.append(HistoryRow(kind: 2, zent: zent(id), key: id.key.rawValue, columns: nil, tombstone: tombstone))
        }
        return rows
    }
}
