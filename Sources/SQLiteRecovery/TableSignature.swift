/// What a record of one table looks like, to tell its records among bytes: how many columns, what
/// each may hold (by the column's declared type, as SQLite's affinity rules store it), which
/// column is the rowid's alias (always NULL in the record), and for Core Data's tables the entity
/// column (Z_ENT) with the numbers its entities have and the version column (Z_OPT).
///
/// Two strengths of check: a cell read from its page's cell pointers has a structure that
/// already vouches for it and is checked leniently; bytes carved from free space are checked
/// strictly (every value of its column's kind), since only the signature tells them from noise.
public struct TableSignature: Sendable, Hashable {
    /// What a column may hold, from its declared type.
    public enum Affinity: Sendable, Hashable {
        /// INTEGER, BOOLEAN: integers (a REAL that is not whole stays REAL).
        case integer
        /// FLOAT, DOUBLE, REAL, TIMESTAMP, DECIMAL, NUMERIC: numbers (whole ones may be stored as integers).
        case real
        /// VARCHAR, TEXT, CHAR, CLOB: text.
        case text
        /// BLOB or no type: anything.
        case blob
    }

    public struct Column: Sendable, Hashable {
        public var name: String
        public var affinity: Affinity

        public init(name: String, declaredType: String) {
            self.name = name
            affinity = Self.affinity(of: declaredType)
        }

        /// SQLite's rules for a declared type's affinity (section 3.1 of its datatype page).
        static func affinity(of declared: String) -> Affinity {
            let type = declared.uppercased()
            if type.contains("INT") { return .integer }
            if type.contains("CHAR") || type.contains("CLOB") || type.contains("TEXT") { return .text }
            if type.contains("BLOB") || type.isEmpty { return .blob }
            return .real
        }
    }

    public var name: String
    public var columns: [Column]
    /// The column declared INTEGER PRIMARY KEY (stored as NULL; its value is the rowid).
    public var rowidColumn: Int?
    /// Z_ENT, and the values it may hold here.
    public var entityColumn: Int?
    public var entityCodes: Set<Int64>
    /// Z_OPT.
    public var versionColumn: Int?
    /// The table's root page in the version the store reads (its live rows).
    public var rootPage: UInt32?

    public init(
        name: String, columns: [Column], rowidColumn: Int?, entityColumn: Int?, entityCodes: Set<Int64>,
        versionColumn: Int?, rootPage: UInt32?
    ) {
        self.name = name
        self.columns = columns
        self.rowidColumn = rowidColumn
        self.entityColumn = entityColumn
        self.entityCodes = entityCodes
        self.versionColumn = versionColumn
        self.rootPage = rootPage
    }

    /// Whether a record with these serial types can be a row of this table. `strict`: every value
    /// of its column's kind, and every column present (rows written before an ALTER TABLE ADD
    /// COLUMN have fewer; only intact cells are allowed that).
    public func accepts(types: [Int64], strict: Bool) -> Bool {
        guard types.count == columns.count || (!strict && types.count >= 3 && types.count < columns.count) else {
            return false
        }
        if let rowidColumn, rowidColumn < types.count, types[rowidColumn] != 0 { return false }
        if let entityColumn, entityColumn < types.count, !RecordFormat.isInteger(types[entityColumn]) { return false }
        if let versionColumn, versionColumn < types.count, types[versionColumn] != 0,
            !RecordFormat.isInteger(types[versionColumn])
        {
            return false
        }
        guard strict else { return true }
        for (type, column) in zip(types, columns) where type != 0 {
            switch column.affinity {
            case .integer: if !(RecordFormat.isInteger(type) || type == 7) { return false }
            case .real: if !(RecordFormat.isInteger(type) || type == 7) { return false }
            case .text: if type < 13 || type % 2 == 0 { return false }
            case .blob: break
            }
        }
        return true
    }

    /// Whether the values of a record this table ``accepts(types:strict:)`` can be its row: Z_ENT
    /// one of its entities, Z_OPT not negative, texts valid UTF-8 when `strict`.
    public func accepts(values: [RecordValue], strict: Bool) -> Bool {
        if let entityColumn, entityColumn < values.count {
            guard case .integer(let code) = values[entityColumn], entityCodes.contains(code) else { return false }
        }
        if let versionColumn, versionColumn < values.count, case .integer(let version) = values[versionColumn],
            version < 0
        {
            return false
        }
        if strict {
            for value in values {
                if case .text(let bytes) = value, String(validating: bytes, as: UTF8.self) == nil { return false }
                if case .real(let d) = value, d.isNaN { return false }
            }
        }
        return true
    }
}
