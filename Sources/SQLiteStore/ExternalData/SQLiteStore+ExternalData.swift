import Foundation
import GRDB
import ObjectGraph

/// The save path's side of external binary data (see ``ExternalDataFolder``).
extension SQLiteStore {
    /// Lists the files of the external values an update of `attributes` (nil: a delete, every
    /// attribute) replaces, read from the row before it changes: they are removed once the save
    /// has committed.
    func noteReplacedExternalData(
        of id: ObjectID, attributes: Set<String>?, _ db: Database, _ files: inout ExternalDataChanges
    ) throws(ObjectGraphError) {
        let columns = layout[id.entity].attributes.filter {
            $0.attribute.allowsExternalBinaryDataStorage && (attributes?.contains($0.attribute.name) ?? true)
        }.compactMap(\.column)
        guard !columns.isEmpty, let table = layout[id.entity].table else { return }
        let sql =
            "SELECT \(columns.map(\.quotedDatabaseIdentifier).joined(separator: ", ")) FROM \(table.quotedDatabaseIdentifier) WHERE Z_PK = ?"
        do {
            for row in try rows(db, sql, [id.key.rawValue]) {
                for value in row.databaseValues {
                    if let file = mechanisms.externalData.file(referencedBy: value) { files.obsolete.append(file) }
                }
            }
        } catch {
            throw Self.mapError(error, file: path)
        }
    }
}
