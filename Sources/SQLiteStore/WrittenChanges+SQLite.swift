import CoreDataSchema
import GRDB

/// A save's record of what it wrote, with tombstones as SQLite holds them.
typealias WrittenChanges = CoreDataSchema.WrittenChanges<DatabaseValue>
