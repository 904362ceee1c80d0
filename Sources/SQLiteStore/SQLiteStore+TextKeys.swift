import CoreDataSchema
import ObjectGraph

extension SQLiteStore {
    /// Refuses a save that would write a table whose keys are TEXT (read through a view, see
    /// ``FileSchema/textKeyTables``): a view cannot be written, and SQLite's own message ("cannot
    /// modify ZPOST because it is a view") would not say what to do.
    func refuseTextKeyTables(_ request: SaveRequest) throws(ObjectGraphError) {
        guard !textKeyTables.isEmpty else { return }
        var touched =
            request.inserted.map(\.objectID) + request.updated.map(\.objectID) + request.deleted.map(\.objectID)
        touched += request.toManyChanges.flatMap { [$0.source] + $0.destinations }
        for id in touched {
            guard id.entity.rawValue >= 1, id.entity.rawValue <= layout.entities.count,
                let table = layout[layout[id.entity].rootID].table, textKeyTables.contains(table.uppercased())
            else { continue }
            throw ObjectGraphError(
                .unsupported,
                "\(path): table \(table) holds its Z_PK/Z_ENT/Z_OPT as text (rebuilt by another tool), so storefs reads it "
                    + "but does not write it; rebuild it with INTEGER columns (or mount read-only)")
        }
    }
}
